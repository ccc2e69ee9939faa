"""The API's rate limit per key (ADR-015).

Flask-Limiter on the API blueprint, counted in Redis like the login limits (nexo/security.py), so every
gunicorn worker and host shares one count per key. The count is keyed by a hash of the presented
Authorization header, not by a database lookup: the limit is checked before the key is authenticated,
and an unknown key hammering the API is limited too. With Redis down the limiter fails open
(swallow_errors in nexo/security.py): the API keeps taking orders, whose guarantees live in Postgres.
API_RATE_LIMIT is a security setting, not a business rule.
"""

from __future__ import annotations

import hashlib
import logging
import time

from flask import Blueprint, Flask, g, request

from nexo.settings import SecuritySettings

log = logging.getLogger(__name__)


def _presented_key() -> str:
    return "key:" + hashlib.sha256(request.headers.get("Authorization", "").encode()).hexdigest()[:32]


def _breached(limit) -> None:
    g.retry_after_s = max(1, int(limit.reset_at - time.time()))
    log.warning("API rate limit reached; refusing with 429")


def limit_per_key(app: Flask, bp: Blueprint, settings: SecuritySettings) -> None:
    """Limit every route of the API blueprint per presented key (after security.init_app built the limiter)."""
    limiter = app.extensions["nexo.limiter"]
    limiter.limit(
        settings.api_limit_per_key,
        key_func=_presented_key,
        on_breach=_breached,
        exempt_when=lambda: request.endpoint == "api.openapi",
    )(bp)
    app.extensions["nexo.rate_limited"].blueprints.add(bp.name)
