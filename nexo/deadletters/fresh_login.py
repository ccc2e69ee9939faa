"""Fresh login for dead-letter actions: replaying or discarding needs a recent sign-in (ADR-010).

A session left open on a shared office computer must not be enough to discard a fiscal event. The
window is a security setting: Settings.dlq_fresh_login_s (DLQ_FRESH_LOGIN_S, seconds, default 900).
"""

from __future__ import annotations

import logging
from functools import wraps

from flask import current_app, flash, redirect, session, url_for
from flask_login import current_user

from nexo.auth import login as signing

log = logging.getLogger(__name__)


def is_fresh(login_at, now: float, window_s: float) -> bool:
    """True when the sign-in happened less than window_s seconds ago (no recorded sign-in is not fresh)."""
    return isinstance(login_at, (int, float)) and 0 <= now - login_at <= window_s


def fresh_login_required(next_endpoint: str):
    """Guard a POST: with a stale sign-in, end the session and send the admin to log in again.

    The session is ended (not just redirected) because the login page sends a signed-in visitor home;
    `next` brings them back to the page they were on (a GET), never to the POST itself.
    """

    def decorator(view):
        """Wrap one view."""

        @wraps(view)
        def wrapped(*args, **kwargs):
            """Run the view only for a recent sign-in."""
            window = current_app.config["NEXO_SETTINGS"].dlq_fresh_login_s
            if not is_fresh(session.get("login_at"), current_app.config["NOW"](), window):
                log.info("dead-letter action needs a fresh login (window %ss)", window)
                signing.end_current(current_user._get_current_object())  # on the server too (ADR-018)
                session.pop("login_at", None)
                flash("Por seguridad, volvé a ingresar para reprocesar o descartar entregas fallidas.", "warning")
                target = url_for(next_endpoint, **{k: v for k, v in kwargs.items() if k == "dead_letter_id"})
                return redirect(url_for("auth.login", next=target), code=303)
            return view(*args, **kwargs)

        return wrapped

    return decorator
