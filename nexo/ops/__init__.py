"""Operations: the five signals of a bad day (guarantee 13) on /ops and /metrics, and their recorder."""

from __future__ import annotations

from flask import Flask

from nexo import auth
from nexo.ops import views


def init_app(app: Flask) -> None:
    """Register /ops and /metrics (the scraper's, anonymous unless METRICS_TOKEN is set)."""
    app.register_blueprint(views.bp)
    auth.allow_anonymous(app, "ops.metrics")
