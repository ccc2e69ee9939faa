"""The warehouse's picking list (GET /warehouse/picking, GET /warehouse/orders/<id>/picking): the orders to prepare,
oldest first, one printed page each with its lines, what remains to pick, the deposit and the delivery method.

Read-only, for whoever sees the warehouse page (`warehouse.view`); on the orders blueprint, like the dispatch.
"""

from __future__ import annotations

import uuid

from flask import Blueprint, abort, render_template, request

from nexo.auth.permissions import permission_required
from nexo.extensions import get_db
from nexo.orders import queries as order_queries
from nexo.orders import warehouse_queries as queries
from nexo.states import DISPATCHABLE


@permission_required("warehouse.view")
def picking_list():
    """Every order waiting to leave (of `?deposit=` when given), oldest first, each on its own printed page."""
    with get_db().reading() as conn:
        warehouses = order_queries.warehouses(conn)
        deposit = request.args.get("deposit") or None
        if deposit is not None and deposit not in {w["id"] for w in warehouses}:
            deposit = None  # an unknown code lists every deposit rather than an empty sheet
        orders = queries.orders_to_dispatch(conn, deposit)
    return render_template("orders/picking.html", orders=orders, warehouses=warehouses, deposit=deposit, single=False)


@permission_required("warehouse.view")
def picking_order(order_id: uuid.UUID):
    """One order's picking sheet (404 when it has nothing left to prepare)."""
    with get_db().reading() as conn:
        order = queries.order_to_dispatch(conn, order_id)
    if order is None or order["status"] not in DISPATCHABLE:
        abort(404)
    return render_template("orders/picking.html", orders=[order], warehouses=[], deposit=None, single=True)


def add_routes(bp: Blueprint) -> None:
    """This module's pages on the orders blueprint (nexo/orders/__init__.py); each endpoint is orders.<view>."""
    bp.add_url_rule("/warehouse/picking", view_func=picking_list)
    bp.add_url_rule("/warehouse/orders/<uuid:order_id>/picking", view_func=picking_order)
