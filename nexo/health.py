"""GET /health: is the web tier able to reach its database and Redis?"""

from __future__ import annotations

import logging

from flask import Blueprint, Flask, jsonify

from nexo import auth
from nexo.extensions import get_db, get_redis

bp = Blueprint("health", __name__)
log = logging.getLogger(__name__)


def init_app(app: Flask) -> None:
    """Register /health, open to anyone (a load balancer or a supervisor asks it)."""
    app.register_blueprint(bp)
    auth.allow_anonymous(app, "health.health")


@bp.route("/health")
def health():
    """200 when Postgres and Redis answer; 503 naming the dependency that does not."""
    status = {"status": "ok", "db": "ok", "redis": "ok"}
    try:
        with get_db().reading() as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # any failure to reach it means "down" for a health check
        log.warning("health: database down (%s)", type(exc).__name__)
        status["db"] = "down"
    try:
        get_redis().ping()
    except Exception as exc:
        log.warning("health: redis down (%s)", type(exc).__name__)
        status["redis"] = "down"
    if "down" in status.values():
        status["status"] = "down"
        return jsonify(status), 503
    return jsonify(status)
