"""Probes: GET /health (Postgres and Redis both), /livez (the process answers), /readyz (it can take an order).

/readyz is what a balancer asks in a fleet (ADR-019): an order commits without Redis (guarantee 17:
losing Redis only delays events), so Redis down is `degraded`, still 200; Postgres down is 503, so the
balancer sends orders to a host that can keep them; so is a server that does not take writes (the
standby a failover is still promoting: `read_only`). /health stays as CONTRACT.md has it.
"""

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
    for endpoint in ("health.health", "health.livez", "health.readyz"):
        auth.allow_anonymous(app, endpoint)


@bp.route("/livez")
def livez():
    """200 while the process answers: nothing else is asked (a liveness probe must not restart a host for Postgres)."""
    return jsonify({"status": "alive"})


@bp.route("/readyz")
def readyz():
    """200 when an order can be taken (Postgres answers; Redis down is only `degraded`); 503 otherwise."""
    status = {"status": "ready", "db": _database(writes=True), "redis": "ok" if _redis() == "ok" else "degraded"}
    if status["db"] != "ok":
        status["status"] = "not_ready"
        return jsonify(status), 503
    return jsonify(status)


def _database(*, writes: bool = False) -> str:
    """ok or down; with `writes`, read_only for a server that answers but refuses writes (in recovery)."""
    try:
        with get_db().reading_one() as conn:
            if not writes:
                conn.execute("SELECT 1")
                return "ok"
            # What libpq's target_session_attrs=read-write asks too; on in a standby.
            row = conn.execute("SHOW transaction_read_only").fetchone()
        return "read_only" if row and row["transaction_read_only"] == "on" else "ok"
    except Exception as exc:  # any failure to reach it means "down" for a probe
        log.warning("probe: database down (%s)", type(exc).__name__)
        return "down"


def _redis() -> str:
    try:
        get_redis().ping()
        return "ok"
    except Exception as exc:
        log.warning("probe: redis down (%s)", type(exc).__name__)
        return "down"


@bp.route("/health")
def health():
    """200 when Postgres and Redis answer; 503 naming the dependency that does not."""
    status = {"status": "ok", "db": _database(), "redis": _redis()}
    if "down" in status.values():
        status["status"] = "down"
        return jsonify(status), 503
    return jsonify(status)
