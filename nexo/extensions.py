"""Process-wide helpers shared by the blueprints: login manager, CSRF, database, Redis."""

from __future__ import annotations

import redis
from flask import current_app
from flask_login import LoginManager
from flask_wtf.csrf import CSRFProtect

from nexo.db import Database

login_manager = LoginManager()
csrf = CSRFProtect()


def get_db() -> Database:
    """The application's Database (one pool per process)."""
    return current_app.extensions["nexo.db"]


def get_redis() -> redis.Redis:
    """The application's Redis client (job transport and rate-limit storage only)."""
    return current_app.extensions["nexo.redis"]


def get_wakeup():
    """The application's relay wake-up (nexo.outbox.wakeup.Wakeup), built once in create_app."""
    return current_app.extensions["nexo.wakeup"]


def get_client_options():
    """The order form's client select of this process (nexo.orders.client_options.ClientOptions)."""
    return current_app.extensions["nexo.client_options"]


def make_redis(url: str) -> redis.Redis:
    """A Redis client that fails fast: Redis being down must delay events, never hang a request."""
    return redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2, health_check_interval=30)
