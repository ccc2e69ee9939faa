"""Dead letters (ADR-010): events that reached FALLIDO, for a human to replay or discard."""

from __future__ import annotations

from flask import Flask

from nexo import navigation
from nexo.deadletters import views


def init_app(app: Flask) -> None:
    """Register the dead-letter pages and their menu badge (pending dead letters, ADR-004)."""
    app.register_blueprint(views.bp)
    navigation.add_badge(app, "deadletters.list_dead_letters", views.pending_badge)
