"""What left the warehouse (guarantee 19), from Sergio's page: POST /warehouse/orders/<id>/dispatch, and the
section of the warehouse page (nexo/handoffs draws the page) listing the orders to dispatch and the last dispatches.

The form is idempotent like the order form: each drawing of an order's form carries its own
`dispatch_id`, the shipment's Idempotency-Key, so a resubmitted form (a double click, a lost answer)
is the same shipment, never a second one (ADR-005's rule, for dispatches).
"""

from __future__ import annotations

import uuid

from flask import Blueprint, abort, flash, g, redirect, render_template, request, url_for
from flask_login import current_user

from nexo.auth.permissions import permission_required
from nexo.db import Conn
from nexo.errors import render_error
from nexo.extensions import get_db, get_wakeup
from nexo.navigation import Section
from nexo.orders import dispatch, shipments
from nexo.orders import warehouse_queries as queries
from nexo.orders.fingerprint import normalise_sku
from nexo.orders.forms import DispatchInput, parse_uuid, read_dispatch
from nexo.states import OrderStatus

DISPATCH = "warehouse.dispatch"


def _load_section(conn: Conn, *, deposit: str | None = None) -> dict:
    """The orders to dispatch and the last dispatches, of one deposit (a code the page checked) or of every one."""
    orders = queries.orders_to_dispatch(conn, deposit)
    return {
        "orders": orders,
        "dispatch_ids": {order["id"]: uuid.uuid4() for order in orders},  # a new key for each drawing of a form
        "waiting": queries.count_to_dispatch(conn, deposit),
        "shipments": queries.recent_shipments(conn, deposit),
        "count_cap": queries.COUNT_CAP,
        "deposit": deposit,
    }


# Added to the warehouse page by nexo/orders/__init__.py.
SECTION = Section("orders/_warehouse_section.html", _load_section)


@permission_required(DISPATCH)
def dispatch_order(order_id: uuid.UUID):
    """Record what left (default: everything that remains): 303 to the warehouse page; 400/422 the form again; 409."""
    typed = read_dispatch(request.form)
    key_text = request.form.get("dispatch_id", "")
    key = parse_uuid(key_text) if key_text else None
    if key_text and key is None:
        typed.error = "Este formulario no tiene un identificador válido: volvé a abrir la página del depósito."
    if typed.error:
        return _form_again(order_id, typed, 400, key=key)
    result = dispatch.dispatch_order(
        get_db(),
        dispatch.DispatchOrder(
            order_id, current_user.id, current_user.username, typed.lines, idempotency_key=key, correlation_id=g.get("request_id")
        ),
        get_wakeup(),
    )
    match result:
        case dispatch.Dispatched(shipment_id=shipment_id, status=status):
            flash(_dispatched_message(shipment_id, status), "info")
            return redirect(url_for("handoffs.list_handoffs"), 303)
        case dispatch.Replayed():
            flash("Ese despacho ya estaba registrado: no se registró dos veces.", "info")
            return redirect(url_for("handoffs.list_handoffs"), 303)
        case dispatch.KeyReused():
            message = "Este formulario ya se usó para otro despacho: volvé a abrir la página del depósito y cargalo de nuevo."
            return _refused("dispatch_form_reused", message)
        case dispatch.NotDispatchable():
            message = "Este pedido no se puede despachar: no está confirmado, se anuló o ya salió todo."
            return _refused("order_not_dispatchable", message)
        case dispatch.ExceedsRemaining(lines=over):
            for row in typed.rows:
                row.error = next(
                    (f"Quedan {left} para despachar." for sku, _, left in over if sku == normalise_sku(row.sku)), None
                )
            typed.error = "Una línea pide más de lo que queda por despachar: no se registró nada."
            return _form_again(order_id, typed, 422, key=key, reason="exceeds_remaining", over={sku for sku, _, _ in over})
        case dispatch.Invalid(errors=errors):
            typed.error = errors.get("lines", "Revisá el formulario: no se registró nada.")
            return _form_again(order_id, typed, 400, key=key)
        case dispatch.NotFound():
            return render_error(404)


def _dispatched_message(shipment_id: uuid.UUID, status: OrderStatus) -> str:
    with get_db().reading() as conn:
        shipment = shipments.shipment(conn, shipment_id)
    left = " y ".join(f"{line['quantity']} × {line['sku']}" for line in shipment["lines"]) if shipment else ""
    state = "Salió todo el pedido." if status == OrderStatus.DESPACHADO else "El pedido queda despachado en parte."
    return f"Despacho registrado: {left}. {state}"


def _form_again(
    order_id: uuid.UUID, typed: DispatchInput, status: int, *, key: uuid.UUID | None, reason: str | None = None, over=frozenset()
):
    """The order's form as typed, with what is wrong; its key again (nothing was kept under it: it may be sent again)."""
    with get_db().reading() as conn:
        order = queries.order_to_dispatch(conn, order_id)
    if order is None:
        abort(404)
    return render_template(
        "orders/dispatch.html",
        order=order,
        typed={normalise_sku(row.sku): row for row in typed.rows},
        error=typed.error,
        reason=reason,
        over=over,
        dispatch_id=key or uuid.uuid4(),
    ), status


def _refused(reason: str, message: str):
    back = url_for("handoffs.list_handoffs")
    return render_template("orders/refused.html", reason=reason, message=message, back=back), 409


def add_routes(bp: Blueprint) -> None:
    """This module's pages on the orders blueprint (nexo/orders/__init__.py); each endpoint is orders.<view>."""
    bp.add_url_rule("/warehouse/orders/<uuid:order_id>/dispatch", view_func=dispatch_order, methods=["POST"])
