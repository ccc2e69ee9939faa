"""Handoffs: the orders the warehouse system accepted, as Sergio's list to prepare (GET /warehouse)."""

from __future__ import annotations

from flask import Flask

from nexo.handoffs import views


def init_app(app: Flask) -> None:
    """Register the warehouse's page."""
    app.register_blueprint(views.bp)
