"""CU-01 order entry: the salesperson's form, the create_order use case and the order pages."""

from __future__ import annotations

from flask import Flask

from nexo import errors
from nexo.orders import views
from nexo.orders.client_options import ClientOptions


def init_app(app: Flask) -> None:
    """Register the order pages, the form's client select of this process and the form's retry advice."""
    app.register_blueprint(views.bp)
    app.extensions["nexo.client_options"] = ClientOptions()
    # A database outage can cut the order transaction before or after its commit. Confirming the same
    # form again is always safe: its requestId returns the order if it was kept (RN-06, ADR-005).
    errors.advise_retry(app, "orders.new_order", views.RETRY_ADVICE)
