"""Login (password, then the second factor when the user enrolled one) and logout."""

from __future__ import annotations

import logging
import time
from urllib.parse import urlsplit

from flask import Blueprint, abort, current_app, flash, g, redirect, render_template, request, session, url_for
from flask_login import current_user, login_required

from nexo.auth import login as signing
from nexo.auth import mfa, service, trail
from nexo.auth.forms import LoginForm, SecondFactorForm
from nexo.auth.login_limit import Refused, UsernameLimiter
from nexo.extensions import get_db
from nexo.security import login_rate_limited
from nexo.telemetry import metrics

bp = Blueprint("auth", __name__)
log = logging.getLogger(__name__)
# How long a correct password waits for its second factor before the login starts over.
SECOND_FACTOR_WINDOW_S = 300


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


def _limiter() -> UsernameLimiter:
    return current_app.extensions["nexo.username_limiter"]


def _take_place(username: str):
    """A place for this attempt (CONTRACT: before the check); 429 when the username has none left."""
    place = _limiter().take(username)
    if isinstance(place, Refused):
        g.retry_after_s = place.retry_after_s
        log.warning("login rate limit reached (per username); refusing with 429")
        metrics.count_login_locked_refusal()  # the lockout counter counts once; this counts who keeps trying
        abort(429)
    return place


@bp.route("/login", methods=["GET", "POST"])
@login_rate_limited  # failed attempts per client address (nexo/security.py); per username below
def login():
    """Show the login form; on success start a fresh session (or ask for the second factor) and go to `next`."""
    if current_user.is_authenticated and request.method == "GET":
        return redirect(url_for("home.index"))
    form = LoginForm()
    if form.validate_on_submit():
        username, password = form.username.data or "", form.password.data or ""
        place = _take_place(username)
        with get_db().reading() as conn:
            user = service.authenticate(conn, username, password)
        if user is None:
            log.info("login refused for a username of %d characters", len(username))
            signing.refused(get_db(), username, locked_out=place is not None and place.last)
            flash("Usuario o contraseña incorrectos.", "error")
            return render_template("auth/login.html", form=form), 401
        _limiter().give_back(place)
        destination = safe_next(request.args.get("next")) or url_for("home.index")
        if user.mfa_enrolled:
            session.clear()
            session["second_factor"] = {"user_id": user.id, "username": user.username, "at": time.time(), "next": destination}
            return redirect(url_for("auth.second_factor"))
        signing.begin(user, second_factor=False)
        log.info("user %s logged in", user.id)
        return redirect(destination)
    status = 400 if request.method == "POST" else 200
    return render_template("auth/login.html", form=form), status


@bp.route("/login/second-factor", methods=["GET", "POST"])
@login_rate_limited
def second_factor():
    """The six digits of the authenticator app (or a recovery code) after a correct password."""
    pending = session.get("second_factor")
    if not pending or time.time() - pending["at"] > SECOND_FACTOR_WINDOW_S:
        session.pop("second_factor", None)
        return redirect(url_for("auth.login"))
    form = SecondFactorForm()
    if form.validate_on_submit():
        place = _take_place(pending["username"])
        if not mfa.verify_login(get_db(), pending["user_id"], form.code.data or ""):
            signing.refused(get_db(), pending["username"], action=trail.MFA_FAILED, locked_out=place is not None and place.last)
            flash("El código no es correcto.", "error")
            return render_template("auth/second_factor.html", form=form), 401
        _limiter().give_back(place)
        with get_db().reading() as conn:
            user = service.load_user(conn, pending["user_id"])
        if user is None:
            return redirect(url_for("auth.login"))
        signing.begin(user, second_factor=True)
        return redirect(pending["next"])
    status = 400 if request.method == "POST" else 200
    return render_template("auth/second_factor.html", form=form), status


@bp.route("/logout", methods=["POST"])
@login_required
def logout():
    """End the session on the server: the same cookie sent again afterwards opens nothing."""
    signing.end_current(current_user._get_current_object())
    flash("Cerraste la sesión.", "info")
    return redirect(url_for("auth.login"))
