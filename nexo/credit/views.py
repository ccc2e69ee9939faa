"""The credit officer's pages (CU-02): the queue, approve, reject and the decided tab."""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl

from flask import Blueprint, abort, flash, g, redirect, render_template, request, url_for
from flask_login import current_user

from nexo.auth.permissions import permission_required
from nexo.credit import queries, service
from nexo.credit.forms import ApproveForm, QueueFilters, RejectForm
from nexo.errors import render_error
from nexo.extensions import get_db, get_wakeup, mail_enabled
from nexo.formatting import format_order_number
from nexo.states import OrderStatus

bp = Blueprint("credit", __name__, url_prefix="/credit")
log = logging.getLogger(__name__)

PERMISSION = "credit.authorize"
# Who may read the queue: credit, and the owner (clients.view: credit and the owner), who sees no buttons.
QUEUE_READERS = (PERMISSION, "clients.view")
DECIDED_PAGE_SIZE = 50


@bp.route("/queue")
def queue():
    """Orders waiting for credit, oldest first, with the figures the decision needs; the owner reads it without
    the approve and reject buttons (CONTRACT.md)."""
    if not any(current_user.can(permission) for permission in QUEUE_READERS):
        abort(403)
    filters = QueueFilters.from_args(request.args)
    with get_db().reading() as conn:
        orders = queries.pending_orders(
            conn, client_id=filters.client_id, tier=filters.tier, salesperson_id=filters.salesperson_id
        )
        choices = queries.filter_choices(conn, filters.client_id)
    return render_template(
        "credit/queue.html",
        orders=orders,
        filters=filters,
        choices=choices,
        filters_qs=request.query_string.decode("ascii", "replace"),
        queue_limit=queries.QUEUE_LIMIT,
    )


@bp.route("/queue/<uuid:order_id>/approve", methods=["POST"])
@permission_required(PERMISSION)
def approve(order_id):
    """Authorize the order's excess: 303 to the queue, or 409 saying what stands in the way."""
    form = ApproveForm()
    if not form.validate_on_submit():
        field, message = _first_error(form)
        return render_error(400, "No se registró la autorización: " + message, field=field)
    result = service.approve_order(
        get_db(),
        service.ApproveOrder(
            order_id=order_id,
            officer_id=current_user.id,
            officer_username=current_user.username,
            note=form.note.data,
            seen_exposure_cents=form.seen_exposure_cents.data,
            seen_limit_cents=form.seen_limit_cents.data,
            correlation_id=g.get("request_id"),
        ),
        get_wakeup(),
        mail=mail_enabled(),
    )
    return _respond(result, form)


@bp.route("/queue/<uuid:order_id>/reject", methods=["POST"])
@permission_required(PERMISSION)
def reject(order_id):
    """Refuse the order (reason required): 303 to the queue, 400 without a reason, 409 if not pending."""
    form = RejectForm()
    if not form.validate_on_submit():
        with get_db().reading() as conn:
            orders = queries.pending_orders(conn, order_id=order_id)
        return render_template("credit/reject.html", form=form, order=orders[0] if orders else None, order_id=order_id), 400
    result = service.reject_order(
        get_db(),
        service.RejectOrder(
            order_id=order_id,
            officer_id=current_user.id,
            officer_username=current_user.username,
            reason=form.reason.data or "",  # required by RejectForm: never empty here
            correlation_id=g.get("request_id"),
        ),
        get_wakeup(),
        mail=mail_enabled(),
    )
    return _respond(result, form)


@bp.route("/decided")
def decided():
    """Who decided what, when and why, newest first (read by the same people as the queue)."""
    if not any(current_user.can(permission) for permission in QUEUE_READERS):
        abort(403)
    asked = request.args.get("page", "1")
    page = int(asked) if asked.isdigit() and 0 < int(asked) < 100_000 else 1
    with get_db().reading() as conn:
        rows, total = queries.decided_orders(conn, limit=DECIDED_PAGE_SIZE, offset=(page - 1) * DECIDED_PAGE_SIZE)
    return render_template("credit/decided.html", rows=rows, total=total, page=page, has_next=page * DECIDED_PAGE_SIZE < total)


def _respond(result: service.DecisionResult, form):
    back = url_for("credit.queue", **QueueFilters.from_args(dict(parse_qsl(form.filters.data or ""))).query_args())
    match result:
        case service.Decided(order_id=order_id, status=status):
            word = "autorizado y confirmado" if status == OrderStatus.CONFIRMADO else "rechazado"
            flash(f"Pedido {format_order_number(_number_of(order_id))} {word}.", "info")
            return redirect(back, 303)
        case service.NotFound():
            return render_error(404, "Ese pedido no existe.")
        case service.OwnOrder():
            # Separation of duties (ADR-018): whoever entered the order cannot authorize or reject it.
            message = "No podés decidir el crédito de un pedido que cargaste vos: lo decide otra persona de crédito."
            return render_error(403, message, reason="own_order")
        case service.FiguresChanged():
            # 409: the approval conflicts with the client's current state. Nothing was approved; the page
            # shows before/after and a second form that carries the new figures (CU-02: no silent re-check).
            with get_db().reading() as conn:  # the page names the order and the client it is about
                order = next(iter(queries.pending_orders(conn, order_id=result.order_id)), None)
            return render_template("credit/confirm_again.html", result=result, order=order, form=form, back=back), 409
        case service.AlreadyDecided() | service.ReservationReleased():
            number = _number_of(result.order_id)
            return render_template("credit/conflict.html", result=result, number=number, kind=result.outcome, back=back), 409


def _number_of(order_id) -> int | None:
    """The order's number (ADR-020), for the words after a decision; the decision itself never needs it."""
    with get_db().reading() as conn:
        return queries.order_number(conn, order_id)


def _first_error(form) -> tuple[str | None, str]:
    return next(((name, errors[0]) for name, errors in form.errors.items() if errors), (None, "datos inválidos."))


def pending_badge() -> int | None:
    """The count of orders waiting for credit, for the navigation; None (no badge) on any error."""
    try:
        with get_db().reading() as conn:
            return queries.pending_count(conn) or None
    except Exception:  # a badge is never a reason to fail a page
        log.warning("credit badge unavailable", exc_info=True)
        return None
