"""Operations: the five signals of a bad day (guarantee 13) on /ops and /metrics, and their recorder."""

from __future__ import annotations

from flask import Flask, abort, request

from nexo import auth
from nexo.ops import views


def init_app(app: Flask) -> None:
    """Register /ops and /metrics (the scraper's, anonymous unless METRICS_TOKEN is set; with METRICS_PORT
    only on that local port, where nothing else is served)."""
    app.register_blueprint(views.bp)
    auth.allow_anonymous(app, "ops.metrics")
    if app.config["NEXO_SETTINGS"].metrics_port:
        app.before_request(_metrics_port_serves_only_metrics)


def _metrics_port_serves_only_metrics() -> None:
    if views.arrived_on_metrics_port() and request.endpoint != "ops.metrics":
        abort(404)
