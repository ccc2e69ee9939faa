"""Nexo: the order system a distributor can trust on its worst morning."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from flask import Flask

from nexo import (
    api,
    auth,
    backup,
    books,
    credit,
    deadletters,
    demo,
    errors,
    extensions,
    formatting,
    handoffs,
    health,
    home,
    migrations,
    navigation,
    observability,
    ops,
    orders,
    outbox,
    security,
    vocabulary,
)
from nexo.settings import Settings
from nexo.telemetry import metrics

ROOT = Path(__file__).resolve().parent.parent


def create_app(settings: Settings | None = None, test_config: dict[str, Any] | None = None) -> Flask:
    """Build the Flask application from settings (by default read from the environment), plus test overrides.

    A table of contents: each package registers its own blueprint, commands and hooks (`init_app`).
    """
    settings = settings or Settings.from_env()
    app = Flask(__name__, template_folder=str(ROOT / "templates"), static_folder=str(ROOT / "static"))
    app.config.update(
        SECRET_KEY=settings.secret_key,
        NEXO_SETTINGS=settings,
        NOW=time.time,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        REMEMBER_COOKIE_HTTPONLY=True,
        WTF_CSRF_TIME_LIMIT=8 * 3600,  # a salesperson keeps a form open all morning
        MAX_CONTENT_LENGTH=256 * 1024,
    )
    if test_config:
        app.config.update(test_config)
    observability.configure_logging()
    # First of all request hooks: even a CSRF refusal is logged with its request id.
    observability.init_app(app, server_timing=settings.server_timing)
    extensions.init_app(app, settings)  # the pool, Redis, CSRF
    outbox.init_app(app, settings)  # the relay wake-up rung after each commit (ADR-004)
    formatting.init_app(app)  # |money, |local_time, |duration
    vocabulary.init_app(app)  # codes in words: |order_status, |reason, |delivery_error… (ADR-021)
    errors.init_app(app)  # error pages in Spanish; 503 when Postgres or Redis is down
    migrations.init_app(app)  # flask db upgrade
    books.init_app(app)  # flask check: stock and credit add up
    auth.init_app(app)  # every page needs a login unless its package says otherwise; flask users
    navigation.init_app(app)  # the menu
    health.init_app(app)
    home.init_app(app)
    orders.init_app(app)  # CU-01
    credit.init_app(app)  # CU-02
    handoffs.init_app(app)
    deadletters.init_app(app)  # ADR-010
    ops.init_app(app)  # /ops, /metrics
    api.init_app(app)  # the Orders API (ADR-015), flask apikeys
    demo.init_app(app)  # flask demo load
    backup.init_app(app)  # flask backup … (ADR-016)
    # After every blueprint: security wraps the views marked for the login limits and builds the limiter
    # the API's per-key limit uses.
    security.init_app(
        app, settings.security, settings.redis_url, settings.fleet.redis_sentinels, settings.fleet.redis_sentinel_master
    )
    api.limit_per_key(app, settings.security)
    metrics.init_app(settings.database_url, settings.database.connect_kwargs())
    return app
