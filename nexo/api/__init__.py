"""The Orders API for integrations: JSON, Idempotency-Key, bearer API keys (ADR-015)."""

from __future__ import annotations

from flask import Flask

from nexo import auth, errors
from nexo.api import admin, cli, problems, rate_limit, views
from nexo.extensions import csrf
from nexo.settings import SecuritySettings


def init_app(app: Flask) -> None:
    """Register the API, the owner's page of keys and `flask apikeys`; problem+json for every error under
    /api/, also those raised before any API view runs (404, 405, 413, a database outage's 503)."""
    app.register_blueprint(views.bp)
    # A bearer key is not sent by a browser on its own, so there is no cross-site request to forge.
    csrf.exempt(views.bp)
    app.register_blueprint(admin.bp)
    app.register_blueprint(cli.bp)
    auth.authenticates_itself(app, problems.API_PREFIX)  # bearer keys, never the session cookie
    errors.register_error_format(app, problems.API_PREFIX, problems.from_http_status)


def limit_per_key(app: Flask, settings: SecuritySettings) -> None:
    """The rate limit per API key; call after nexo.security.init_app, which builds the limiter."""
    rate_limit.limit_per_key(app, views.bp, settings)
