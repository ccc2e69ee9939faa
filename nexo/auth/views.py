"""Login and logout pages."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from flask import Blueprint, current_app, flash, redirect, render_template, request, session, url_for
from flask_login import current_user, login_required, login_user, logout_user

from nexo.auth import service
from nexo.auth.forms import LoginForm
from nexo.extensions import get_db
from nexo.security import login_rate_limited

bp = Blueprint("auth", __name__)
log = logging.getLogger(__name__)


def safe_next(target: str | None) -> str | None:
    """Accept only a same-site path as the post-login destination (no scheme, no host, no '//')."""
    if not target:
        return None
    target = target.strip()
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith(("//", "/\\")):
        return None
    if any(ch in target for ch in "\\\r\n\t"):
        return None
    return target


@bp.route("/login", methods=["GET", "POST"])
@login_rate_limited  # failed attempts per username and per client address (nexo/security.py)
def login():
    """Show the login form; on success start a fresh session and go to `next` or home."""
    if current_user.is_authenticated and request.method == "GET":
        return redirect(url_for("home.index"))
    form = LoginForm()
    if form.validate_on_submit():
        with get_db().reading() as conn:
            # Both fields are required (LoginForm), so validate_on_submit() leaves neither empty.
            user = service.authenticate(conn, form.username.data or "", form.password.data or "")
        if user is None:
            log.info("login refused for a username of %d characters", len(form.username.data or ""))
            flash("Usuario o contraseña incorrectos.", "error")
            return render_template("auth/login.html", form=form), 401
        destination = safe_next(request.args.get("next")) or url_for("home.index")
        # A new session at login: nothing from the anonymous session carries over (session fixation).
        session.clear()
        login_user(user)
        session["login_at"] = current_app.config["NOW"]()
        log.info("user %s logged in", user.id)
        return redirect(destination)
    status = 400 if request.method == "POST" else 200
    return render_template("auth/login.html", form=form), status


@bp.route("/logout", methods=["POST"])
@login_required
def logout():
    """End the session."""
    logout_user()
    session.clear()
    flash("Cerraste la sesión.", "info")
    return redirect(url_for("auth.login"))
