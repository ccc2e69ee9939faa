"""Who is using Nexo and what they may do: login, sessions, accounts, second factor, roles and permissions."""

from __future__ import annotations

from flask import Flask, current_app, g, redirect, request, session, url_for
from flask_login import current_user

from nexo.auth import account_views, admin_views, cli, login, mfa, service, sessions, views
from nexo.auth.login_limit import UsernameLimiter
from nexo.extensions import get_db, login_manager

# What a person may reach while Nexo waits for them to change a one-time password or enrol the
# required second factor (CONTRACT.md: a one-time password reaches no page but the password change).
_PASSWORD_CHANGE_ONLY = {"account.change_password", "auth.logout", "static"}
_ENROLMENT_ONLY = {"account.enrol_second_factor", "account.change_password", "auth.logout", "static"}


def init_app(app: Flask) -> None:
    """Sign-in for every page: the login manager, server-side sessions, the pages and `flask users`; every
    page needs a login unless a package said otherwise (allow_anonymous, authenticates_itself)."""
    settings = app.config["NEXO_SETTINGS"]
    security = settings.security
    app.extensions["nexo.session_limits"] = sessions.Limits(
        security.session_idle_s, security.session_max_s, security.session_touch_s
    )
    app.extensions["nexo.username_limiter"] = UsernameLimiter(app.extensions["nexo.redis"], security.login_limit_per_username)
    login_manager.init_app(app)
    login_manager.login_view = "auth.login"
    login_manager.login_message = "Ingresá para continuar."
    login_manager.login_message_category = "info"
    login_manager.session_protection = "basic"
    login_manager.user_loader(_load_user)
    app.before_request(_require_login)
    for blueprint in (views.bp, account_views.bp, admin_views.bp, cli.bp):
        app.register_blueprint(blueprint)
    allow_anonymous(app, "auth.login", "auth.second_factor", "static")


def allow_anonymous(app: Flask, *endpoints: str) -> None:
    """Let anonymous visitors reach these endpoints (login, health, the scraper's /metrics)."""
    app.extensions.setdefault("nexo.public_endpoints", set()).update(endpoints)


def authenticates_itself(app: Flask, path_prefix: str) -> None:
    """Leave every path under this prefix to its own authentication (the API's bearer keys, never the session)."""
    app.extensions.setdefault("nexo.self_authenticated_prefixes", []).append(path_prefix)


def _load_user(user_id: str) -> service.User | None:
    if g.get("database_unavailable"):
        # The 503 page of a database outage is drawn as for an anonymous visitor: asking the
        # database for the user again would fail again (and turn the 503 into a 500).
        return None
    token = session.get("sid")
    if not isinstance(token, str):
        return None  # a cookie from before server-side sessions, or a forged one: no session
    # One statement: the session is live (not ended, idle or too old) and its user active (ADR-018).
    with get_db().reading_one() as conn:
        user = sessions.load_session_user(conn, token, login.limits())
    return user if user is not None and str(user.id) == user_id else None


def _require_login():
    if request.path.startswith(tuple(current_app.extensions.get("nexo.self_authenticated_prefixes", ()))):
        return None
    public = request.endpoint in current_app.extensions["nexo.public_endpoints"]
    if public:
        return None
    if not current_user.is_authenticated:
        session.pop("sid", None)  # an ended session's id opens nothing: stop sending it
        return login_manager.unauthorized()
    if current_user.must_change_password and request.endpoint not in _PASSWORD_CHANGE_ONLY:
        return redirect(url_for("account.change_password"))
    if (
        current_app.config["NEXO_SETTINGS"].security.mfa_required
        and not current_user.mfa_enrolled
        and mfa.required_for(current_user)
        and request.endpoint not in _ENROLMENT_ONLY
    ):
        return redirect(url_for("account.enrol_second_factor"))
    return None
