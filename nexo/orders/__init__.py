"""CU-01 order entry and the order's life: the salesperson's form, create_order, the order pages, cancel and
the warehouse's dispatch."""

from __future__ import annotations

from flask import Flask

from nexo import errors, navigation

# order_page and warehouse_views add their routes to views.bp when imported: one blueprint, endpoints orders.*
from nexo.orders import order_page, views, warehouse_views  # noqa: F401
from nexo.orders.client_options import ClientOptions


def init_app(app: Flask) -> None:
    """Register the order pages (the dispatch route too), the orders to dispatch on the warehouse page, the form's
    client select of this process and the form's retry advice."""
    app.register_blueprint(views.bp)  # with order_page's and warehouse_views' routes on it
    navigation.add_section(app, "handoffs.list_handoffs", warehouse_views.SECTION)
    app.extensions["nexo.client_options"] = ClientOptions()
    # A database outage can cut the order transaction before or after its commit. Confirming the same
    # form again is always safe: its requestId returns the order if it was kept (RN-06, ADR-005).
    errors.advise_retry(app, "orders.new_order", views.RETRY_ADVICE)
