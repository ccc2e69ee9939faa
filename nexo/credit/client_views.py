"""A client's account (guarantee 19): GET /clients/<id> for credit and the owner; payments and limit changes for
credit (`credit.authorize`). The owner reads the page without its forms."""

from __future__ import annotations

import uuid

from flask import Blueprint, abort, flash, redirect, render_template, url_for
from flask_login import current_user

from nexo.auth.permissions import permission_required
from nexo.credit import client_queries as queries
from nexo.credit import payments
from nexo.credit.forms import LimitForm, PaymentForm
from nexo.errors import render_error
from nexo.extensions import get_db
from nexo.formatting import format_ars, parse_ars

bp = Blueprint("clients", __name__, url_prefix="/clients")

VIEW = "clients.view"
ACT = "credit.authorize"


@bp.route("/<uuid:client_id>")
@permission_required(VIEW)
def show_client(client_id: uuid.UUID):
    """Limit, exposure, available credit, open orders, payments and past decisions, each with its time."""
    return _render(client_id)


def _render(client_id: uuid.UUID, *, payment_form=None, limit_form=None, reason: str | None = None, status: int = 200):
    with get_db().reading() as conn:
        client = queries.client(conn, client_id)
        if client is None:
            abort(404)
        account = {
            "open_orders": queries.open_orders(conn, client_id),
            "payments": queries.payments(conn, client_id),
            "decisions": queries.decisions(conn, client_id),
        }
    if current_user.can(ACT):
        payment_form = payment_form or PaymentForm(formdata=None, payment_id=str(uuid.uuid4()))
        limit_form = limit_form or LimitForm(formdata=None)
    else:  # the owner reads the account; only credit moves it
        payment_form = limit_form = None
    return render_template(
        "credit/client.html", client=client, payment_form=payment_form, limit_form=limit_form, reason=reason, **account
    ), status


@bp.route("/<uuid:client_id>/payments", methods=["POST"])
@permission_required(ACT)
def record_payment(client_id: uuid.UUID):
    """Record a payment: 303 to the client's page; 400 the form again; 422 when it is more than the client owes."""
    form = PaymentForm()
    valid = form.validate_on_submit()
    key = _uuid_or_none(form.payment_id.data)
    if form.payment_id.data and key is None:  # a form of ours always carries one
        valid, form.payment_id.data = False, str(uuid.uuid4())
        form.amount.errors = [*form.amount.errors, "Este formulario no es válido: revisá los datos y envialo de nuevo."]
    if not valid:
        return _render(client_id, payment_form=form, status=400)
    cmd = payments.RecordPayment(
        client_id=client_id,
        amount_cents=parse_ars(form.amount.data or ""),
        reference=form.reference.data or "",
        actor_id=current_user.id,
        actor_username=current_user.username,
        idempotency_key=key,
    )
    match payments.record_payment(get_db(), cmd):
        case payments.PaymentRecorded(exposure_cents=exposure):
            flash(
                f"Pago de {format_ars(cmd.amount_cents)} registrado. La exposición del cliente quedó en {format_ars(exposure)}.",
                "info",
            )
            return redirect(url_for("clients.show_client", client_id=client_id), 303)
        case payments.PaymentReplayed():
            flash("Ese pago ya estaba registrado: no se registró dos veces.", "info")
            return redirect(url_for("clients.show_client", client_id=client_id), 303)
        case payments.PaymentKeyReused():
            form.payment_id.data = str(uuid.uuid4())
            form.amount.errors = ["Este formulario ya se usó para otro pago: revisá los datos y envialo de nuevo."]
            return _render(client_id, payment_form=form, status=409)
        case payments.ExceedsExposure(exposure_cents=owed):
            form.amount.errors = [f"Es más de lo que el cliente debe ({format_ars(owed)}): no se registró nada."]
            return _render(client_id, payment_form=form, reason="payment_exceeds_exposure", status=422)
        case payments.ClientNotFound():
            return render_error(404)


@bp.route("/<uuid:client_id>/limit", methods=["POST"])
@permission_required(ACT)
def change_limit(client_id: uuid.UUID):
    """Set the client's credit limit (reason required, audited): 303 to its page; 400 the form again."""
    form = LimitForm()
    if not form.validate_on_submit():
        return _render(client_id, limit_form=form, status=400)
    limit = parse_ars(form.limit.data or "")
    previous = payments.change_limit(
        get_db(), payments.ChangeLimit(client_id, limit, form.reason.data or "", current_user.username)
    )
    if previous is None:
        abort(404)
    flash(f"Límite de crédito cambiado de {format_ars(previous)} a {format_ars(limit)}.", "info")
    return redirect(url_for("clients.show_client", client_id=client_id), 303)


def _uuid_or_none(text: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID((text or "").strip())
    except ValueError:
        return None
