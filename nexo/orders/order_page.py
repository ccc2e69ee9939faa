"""One order's page (GET /orders/<id>): its lines, reservations, story and deliveries; and its cancel (POST
/orders/<id>/cancel, guarantee 19) for its salesperson, credit and the owner while nothing left the warehouse."""

from __future__ import annotations

import uuid

from flask import Blueprint, abort, flash, g, redirect, render_template, session, url_for
from flask_login import current_user

from nexo.errors import render_error
from nexo.extensions import get_db, get_wakeup
from nexo.formatting import format_ars
from nexo.orders import cancel, queries, timeline
from nexo.orders.forms import CancelForm
from nexo.orders.views import ORDER_VIEWER_PERMISSIONS, REPLAYED_KEY
from nexo.states import CANCELLABLE

# Who may cancel any order (credit, the owner); a salesperson cancels their own (CONTRACT.md).
CANCEL_ANY = "orders.cancel"


def show_order(order_id: uuid.UUID):
    """One order: lines (ordered and dispatched), reservations, its story, deliveries; the cancel form for who may."""
    return _render_order(order_id, CancelForm(formdata=None))


def _render_order(order_id: uuid.UUID, cancel_form: CancelForm, status: int = 200):
    with get_db().reading() as conn:
        order = queries.order_header(conn, order_id)
        if order is None or not _may_view(order):
            abort(404)  # a stranger's order looks exactly like a missing one
        events = queries.order_events(conn, order_id, entered_at=order["created_at"])
        audit = queries.order_audit(conn, order_id)
        shipments = queries.order_shipments(conn, order_id)
        lines = queries.order_lines(conn, order_id)
        reservations = queries.order_reservations(conn, order_id)
    replayed = session.pop(REPLAYED_KEY, None) == str(order_id)
    return render_template(
        "orders/show.html",
        order=order,
        replayed=replayed,
        lines=lines,
        reservations=reservations,
        events=events,
        audit=audit,
        timeline=timeline.build(order, events, shipments, audit),
        cancel_form=cancel_form if _may_cancel(order) else None,
    ), status


def _may_view(order: dict) -> bool:
    if order["salesperson_id"] == current_user.id:
        return True
    return any(current_user.can(permission) for permission in ORDER_VIEWER_PERMISSIONS)


def _may_cancel(order: dict) -> bool:
    mine = order["salesperson_id"] == current_user.id
    return order["status"] in CANCELLABLE and (mine or current_user.can(CANCEL_ANY))


def cancel_order(order_id: uuid.UUID):
    """Cancel the order (reason required): 303 back to it saying what was released; 409 when it cannot be."""
    form = CancelForm()
    if not form.validate():
        return _render_order(order_id, form, 400)  # 404 there for someone else's order, as for a GET
    result = cancel.cancel_order(
        get_db(),
        cancel.CancelOrder(
            order_id=order_id,
            actor_id=current_user.id,
            actor_username=current_user.username,
            reason=form.reason.data or "",
            may_cancel_any=current_user.can(CANCEL_ANY),
            correlation_id=g.get("request_id"),
        ),
        get_wakeup(),
    )
    match result:
        case cancel.Cancelled():
            flash(_cancelled_message(result), "info")
            return redirect(url_for("orders.show_order", order_id=order_id), 303)
        case cancel.AlreadyCancelled() | cancel.NotCancellable():
            message = (
                "Este pedido ya estaba anulado: no se liberó nada otra vez."
                if isinstance(result, cancel.AlreadyCancelled)
                else "Este pedido ya no se puede anular: fue rechazado o ya salió mercadería del depósito."
            )
            back = url_for("orders.show_order", order_id=order_id)
            return render_template("orders/refused.html", reason="order_not_cancellable", message=message, back=back), 409
        case cancel.NotFound():
            return render_error(404)  # someone else's order looks exactly like a missing one


def _cancelled_message(result: cancel.Cancelled) -> str:
    released = " y ".join(f"{quantity} × {sku}" for sku, quantity in result.released)
    parts = ["Pedido anulado."]
    parts.append(f"Se liberó la reserva de {released}." if released else "No tenía stock reservado.")
    if result.given_back_cents:
        parts.append(f"Se devolvieron {format_ars(result.given_back_cents)} al crédito del cliente.")
    else:
        parts.append("No había crédito que devolver: el pedido no se había confirmado.")
    if result.event_ids:
        parts.append("Se avisa la anulación a quien ya había recibido el pedido (depósito, facturación).")
    return " ".join(parts)


def add_routes(bp: Blueprint) -> None:
    """This module's pages on the orders blueprint (nexo/orders/__init__.py); each endpoint is orders.<view>."""
    bp.add_url_rule("/orders/<uuid:order_id>", view_func=show_order)
    bp.add_url_rule("/orders/<uuid:order_id>/cancel", view_func=cancel_order, methods=["POST"])
