"""Process-wide helpers shared by the blueprints: login manager, CSRF, database, Redis."""

from __future__ import annotations

import redis
from flask import Flask, current_app
from flask_login import LoginManager
from flask_wtf.csrf import CSRFProtect

from nexo import form_input, redis_client
from nexo.db import Database
from nexo.settings import Settings

login_manager = LoginManager()
csrf = CSRFProtect()


def init_app(app: Flask, settings: Settings) -> None:
    """The process's connection pool and Redis client, and CSRF on every form."""
    # The last line of the form input guard (nexo/form_input.py): no control character a route let
    # through reaches the database.
    app.extensions["nexo.db"] = Database(
        settings.database_url,
        max_size=settings.db_pool_max,
        timeout_s=settings.db_pool_timeout_s,
        configure=form_input.refuse_control_characters,
        connect_kwargs=settings.database.connect_kwargs(),
    )
    app.extensions["nexo.redis"] = redis_for(settings)
    csrf.init_app(app)


def get_db() -> Database:
    """The application's Database (one pool per process)."""
    return current_app.extensions["nexo.db"]


def get_redis() -> redis.Redis:
    """The application's Redis client (job transport and rate-limit storage only)."""
    return current_app.extensions["nexo.redis"]


def get_wakeup():
    """The application's relay wake-up (nexo.outbox.wakeup.Wakeup), built once by nexo.outbox.init_app."""
    return current_app.extensions["nexo.wakeup"]


def mail_enabled() -> bool:
    """Whether email notifications are on (SMTP_URL set): the use cases then queue them (nexo/mail/)."""
    return current_app.config["NEXO_SETTINGS"].mail is not None


def make_redis(url: str) -> redis.Redis:
    """A Redis client that fails fast: Redis being down must delay events, never hang a request."""
    return redis_client.connect(url)


def redis_for(settings: Settings, *, socket_timeout: float | None = 2.0) -> redis.Redis:
    """This process's Redis client: REDIS_URL, or the master REDIS_SENTINELS name (ADR-019); fails fast by default."""
    fleet = settings.fleet
    return redis_client.connect(
        settings.redis_url, fleet.redis_sentinels, fleet.redis_sentinel_master, socket_timeout=socket_timeout
    )
