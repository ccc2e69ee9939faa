"""CU-01 order entry and the order's life: the salesperson's form, create_order, the order pages, cancel and
the warehouse's dispatch."""

from __future__ import annotations

from flask import Blueprint, Flask

from nexo import errors, navigation
from nexo.orders import order_list, order_page, picking, views, warehouse_views
from nexo.orders.client_options import ClientOptions


def init_app(app: Flask) -> None:
    """Register the order pages (the dispatch route too), the orders to dispatch on the warehouse page, the form's
    client select of this process and the form's retry advice."""
    # A blueprint per app: Flask refuses routes added to a blueprint once registered, and the tests build many apps.
    bp = Blueprint("orders", __name__)  # endpoints orders.<view>
    views.add_routes(bp)  # the form and its lookups
    order_list.add_routes(bp)  # my orders, every order, the CSV
    order_page.add_routes(bp)  # one order and its cancel
    picking.add_routes(bp)  # the warehouse's picking lists
    warehouse_views.add_routes(bp)  # the warehouse's dispatch
    app.register_blueprint(bp)
    navigation.add_section(app, "handoffs.list_handoffs", warehouse_views.SECTION)
    navigation.add_badge(app, "orders.list_orders", order_list.news_badge)  # what changed since the last look
    app.extensions["nexo.client_options"] = ClientOptions()
    # A database outage can cut the order transaction before or after its commit. Confirming the same
    # form again is always safe: its requestId returns the order if it was kept (RN-06, ADR-005).
    errors.advise_retry(app, "orders.new_order", views.RETRY_ADVICE)
