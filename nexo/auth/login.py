"""Signing in and out on the server (ADR-018): a session row per login, ended by logout or a limit."""

from __future__ import annotations

from flask import current_app, session
from flask_login import login_user, logout_user

from nexo.auth import sessions, trail
from nexo.auth.service import User
from nexo.db import Database
from nexo.extensions import get_db
from nexo.telemetry import metrics


def limits() -> sessions.Limits:
    """This app's session limits (SESSION_IDLE_S, SESSION_MAX_S and the touch resolution)."""
    return current_app.extensions["nexo.session_limits"]


def begin(user: User, *, second_factor: bool) -> None:
    """Start a fresh session for user: its row and trail row, then a new cookie naming only it."""
    token = sessions.new_token()
    with get_db().transaction() as tx:
        client = trail.client()
        session_id = sessions.start(tx.conn, user.id, token, client_addr=client["client_addr"], user_agent=client["user_agent"])
        details = {"session_id": session_id, "second_factor": second_factor}
        trail.record(tx.conn, trail.LOGIN, actor=user.username, user_id=user.id, details=details)
        tx.commit()
    # Nothing of the anonymous session carries over (session fixation): a new cookie, a new id.
    session.clear()
    session["sid"] = token
    login_user(user)
    session["login_at"] = current_app.config["NOW"]()


def end_current(user: User, reason: str = "logout") -> None:
    """End the session this request runs in, on the server first, then forget the cookie."""
    if user.session_id is not None:
        with get_db().transaction() as tx:
            if sessions.end(tx.conn, user.session_id, reason):
                trail.record(tx.conn, trail.LOGOUT, actor=user.username, user_id=user.id, details={"session_id": user.session_id})
            tx.commit()
    logout_user()
    session.clear()


def refused(db: Database, typed_username: str, *, action: str = trail.LOGIN_FAILED, locked_out: bool) -> None:
    """Record a refused attempt (and the lockout it caused); never what was typed unless it names a user."""
    metrics.count_login_failure()
    if locked_out:
        metrics.count_login_lockout()
    with db.transaction() as tx:
        row = tx.execute("SELECT id, username FROM app_user WHERE username = %s", [typed_username.strip().lower()]).fetchone()
        user_id, actor = (row["id"], row["username"]) if row else (None, "anonymous")
        trail.record(tx.conn, action, actor=actor, user_id=user_id, details={"known_user": row is not None})
        if locked_out:
            trail.record(tx.conn, trail.LOCKED_OUT, actor=actor, user_id=user_id, details={"known_user": row is not None})
        tx.commit()
