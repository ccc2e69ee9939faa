"""GET /ops (the operations page) and GET /metrics (Prometheus text for a scraper)."""

from __future__ import annotations

import hmac

from flask import Blueprint, Response, abort, current_app, render_template, request, url_for
from prometheus_client import CONTENT_TYPE_LATEST

from nexo.auth.permissions import permission_required
from nexo.extensions import get_db
from nexo.formatting import format_duration
from nexo.ops import charts, exposition, service
from nexo.outbox.registry import LABELS
from nexo.unknowns import UNKNOWNS

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
        labels=LABELS,
        outbox_retention_days=settings.outbox_retention_days,
        links=_links(),
    )


def _charts(data: service.Dashboard) -> dict:
    named_age = {LABELS[d]: v for d, v in data.pending_age_history.items()}
    return {
        "conflicts": charts.bar_chart(
            "Conflictos request_id_reused por hora", data.current.conflicts_per_hour, charts.format_count, charts.count_ceiling
        ),
        "p95": charts.line_chart(
            "p95 de la transacción de pedido por hora",
            {"p95": data.transaction_p95_per_hour},
            format_duration,
            charts.nice_duration_ceiling,
            bars_alignment=True,
        ),
        "pending_age": charts.line_chart(
            "Antigüedad del evento PENDIENTE más viejo", named_age, format_duration, charts.nice_duration_ceiling
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
