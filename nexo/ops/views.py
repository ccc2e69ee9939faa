"""GET /ops (the operations page) and GET /metrics (Prometheus text for a scraper)."""

from __future__ import annotations

import hmac
from datetime import UTC, datetime

from flask import Blueprint, Response, abort, current_app, render_template, request, url_for
from prometheus_client import CONTENT_TYPE_LATEST

from nexo.auth.permissions import permission_required
from nexo.extensions import get_db
from nexo.formatting import format_duration
from nexo.mail import repository as mail_rows
from nexo.ops import charts, exposition, service
from nexo.unknowns import UNKNOWNS
from nexo.vocabulary import DESTINATION

bp = Blueprint("ops", __name__)


@bp.route("/ops")
@permission_required("ops.view")
def dashboard():
    """The five signals with their last 24 hours, the undefined thresholds and the register of unknowns."""
    settings = current_app.config["NEXO_SETTINGS"]
    data = service.read_dashboard(get_db(), settings.fleet.host_expiry_s)
    return render_template(
        "ops/dashboard.html",
        data=data,
        signals=data.current,
        charts=_charts(data),
        unknowns=UNKNOWNS,
        labels=DESTINATION,
        outbox_retention_days=settings.outbox_retention_days,
        links=_links(),
        backups=_backups(),
        email=_email(settings.mail is not None),
    )


def _email(on: bool) -> dict:
    """The email notifications' line (nexo/mail/): on or off, sent, waiting, failed for good."""
    with get_db().reading() as conn:
        row = mail_rows.summary(conn)
    oldest = row["oldest_waiting_at"]
    return {
        "on": on,
        "sent_24h": row["sent_24h"],
        "waiting": row["waiting"],
        "failed": row["failed"],
        "oldest_waiting_age_s": None if oldest is None else (datetime.now(UTC) - oldest).total_seconds(),
    }


def _backups() -> dict | None:
    """The backups' freshness for the page (ADR-016): ages in seconds, None where there is nothing yet."""
    current = exposition.backup_status(get_db())
    if current is None:
        return None
    now = datetime.now(UTC)

    def age(moment: datetime | None) -> float | None:
        return None if moment is None else (now - moment).total_seconds()

    return {
        "count": current.backups,
        "newest_age_s": age(current.newest_backup_at),
        "verify_age_s": age(current.last_verify_at),
        "verify_ok": current.last_verify_ok,
        "wal_age_s": age(current.wal_archived_at),
        "wal_missing": current.wal_missing,
        "wal_end_checked": current.wal_end_checked,
        "archiver_failing": current.archiver_failing,
    }


def _charts(data: service.Dashboard) -> dict:
    named_age = {DESTINATION[d]: v for d, v in data.pending_age_history.items()}
    return {
        "conflicts": charts.bar_chart(
            "Formularios reusados para otro pedido, por hora",
            data.current.conflicts_per_hour,
            charts.format_count,
            charts.count_ceiling,
        ),
        "p95": charts.line_chart(
            "Tiempo en que se registran 95 de cada 100 pedidos, por hora",
            {"95 de cada 100 pedidos": data.transaction_p95_per_hour},
            format_duration,
            charts.nice_duration_ceiling,
            bars_alignment=True,
        ),
        "pending_age": charts.line_chart(
            "Antigüedad del aviso pendiente más viejo", named_age, format_duration, charts.nice_duration_ceiling
        ),
    }


def _links() -> dict:
    """Where to act on a signal: the credit queue and the dead-letter list."""
    return {"credit": url_for("credit.queue"), "dead_letters": url_for("deadletters.list_dead_letters")}


@bp.route("/metrics")
def metrics():
    """Prometheus text (counts and durations only); Bearer METRICS_TOKEN required when one is set."""
    settings = current_app.config["NEXO_SETTINGS"]
    if settings.metrics_port and not arrived_on_metrics_port():
        abort(404)  # METRICS_PORT: the web port does not serve /metrics at all
    token = settings.metrics_token
    if token and not _bearer_matches(request.headers.get("Authorization", ""), token):
        return Response("unauthorized\n", 401, {"WWW-Authenticate": 'Bearer realm="metrics"'}, mimetype="text/plain")
    return Response(
        exposition.render(get_db(), settings.prometheus_multiproc_dir, settings.fleet.host_expiry_s),
        headers={"Content-Type": CONTENT_TYPE_LATEST},
    )


def arrived_on_metrics_port() -> bool:
    """True when this request came in on METRICS_PORT (gunicorn's second, local listener: scripts/gunicorn_conf.py)."""
    port = current_app.config["NEXO_SETTINGS"].metrics_port
    sock = request.environ.get("gunicorn.socket")
    try:
        return port is not None and sock is not None and sock.getsockname()[1] == port
    except OSError:
        return False


def _bearer_matches(header: str, token: str) -> bool:
    # Constant-time comparison, so the answer's timing does not reveal how much of a guess was right.
    return hmac.compare_digest(header.encode(), f"Bearer {token}".encode())
