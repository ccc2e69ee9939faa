"""CU-02 credit authorization: the officer's queue of orders over the limit, approve and reject."""

from __future__ import annotations

from flask import Flask

from nexo import navigation
from nexo.credit import views


def init_app(app: Flask) -> None:
    """Register the credit queue and its menu badge (the orders waiting for a decision)."""
    app.register_blueprint(views.bp)
    navigation.add_badge(app, "credit.queue", views.pending_badge)
