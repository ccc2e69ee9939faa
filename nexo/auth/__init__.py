"""Who is using Nexo and what they may do: login, logout, roles and permissions."""

from __future__ import annotations

from flask import Flask, current_app, g, request
from flask_login import current_user

from nexo.auth import cli, service, views
from nexo.extensions import get_db, login_manager


def init_app(app: Flask) -> None:
    """Sign-in for every page: the login manager, the pages and `flask users`; every page needs a login
    unless a package said otherwise (allow_anonymous, authenticates_itself)."""
    login_manager.init_app(app)
    login_manager.login_view = "auth.login"
    login_manager.login_message = "Ingresá para continuar."
    login_manager.login_message_category = "info"
    login_manager.session_protection = "basic"
    login_manager.user_loader(_load_user)
    app.before_request(_require_login)
    app.register_blueprint(views.bp)
    app.register_blueprint(cli.bp)
    allow_anonymous(app, "auth.login", "static")


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
    with get_db().reading_one() as conn:
        return service.load_user(conn, int(user_id))


def _require_login():
    if request.path.startswith(tuple(current_app.extensions.get("nexo.self_authenticated_prefixes", ()))):
        return None
    if request.endpoint not in current_app.extensions["nexo.public_endpoints"] and not current_user.is_authenticated:
        return login_manager.unauthorized()
    return None
