"""The order's life through the API: cancel, shipments, payments — thin over the use cases the pages run too.

Each function builds its use case's command from the validated body and the key's user (audited with
the key), runs it with its lock waits bounded (ADR-015: nexo/api/lock_wait.py) and maps the result to
HTTP with `match`, in CONTRACT.md's words ("Order lifecycle"). Shipments and payments take an
Idempotency-Key: the use case claims it in its own transaction, as create_order claims an order's.
"""

from __future__ import annotations

import uuid

from flask import g

from nexo.api import read_models
from nexo.api import repository as repo
from nexo.api.http import json_response
from nexo.api.keys import Principal
from nexo.api.lock_wait import BoundedLockWait, lock_waits_answered
from nexo.api.problems import ApiProblem
from nexo.api.schemas import CancelIn, PaymentIn, ShipmentIn
from nexo.credit import payments
from nexo.extensions import get_db, get_wakeup
from nexo.orders import cancel, dispatch, shipments

ORDER_GONE = "No such order."


def cancel_order(principal: Principal, order_id: uuid.UUID, body: CancelIn):
    """Cancel the order as the key's user: 200 with the order, also when it was already cancelled."""
    cmd = cancel.CancelOrder(
        order_id,
        principal.user.id,
        principal.user.username,
        body.reason,
        may_cancel_any=principal.user.can("orders.cancel"),  # else only the salesperson's own orders
        api_key_id=principal.key_id,
        correlation_id=g.get("request_id"),
    )
    with lock_waits_answered("cancel"):
        result = cancel.cancel_order(BoundedLockWait(get_db()), cmd, get_wakeup())
    match result:
        case cancel.Cancelled() | cancel.AlreadyCancelled():
            # Already ANULADO is the same answer: a retried cancel releases nothing twice (the use case).
            with get_db().reading_one() as conn:
                order = read_models.order(conn, order_id)
            return json_response(order)
        case cancel.NotCancellable(status=status):
            raise ApiProblem(
                "order_not_cancellable",
                f"The order is {status}: only a CONFIRMADO or PENDIENTE_AUTORIZACION order, with nothing "
                "dispatched, can be cancelled. Nothing was changed.",
            )
        case cancel.NotFound():
            raise ApiProblem("not_found", ORDER_GONE)


def ship(principal: Principal, order_id: uuid.UUID, key: uuid.UUID, body: ShipmentIn):
    """Record what left the warehouse for the order: 201 with the shipment, once per Idempotency-Key."""
    cmd = dispatch.DispatchOrder(
        order_id,
        principal.user.id,
        principal.user.username,
        lines=tuple(dispatch.ShipLine(line.sku, line.quantity) for line in body.lines),
        idempotency_key=key,
        api_key_id=principal.key_id,
        correlation_id=g.get("request_id"),
    )
    with lock_waits_answered("shipment", claim_relation="shipment"):
        result = dispatch.dispatch_order(BoundedLockWait(get_db()), cmd, get_wakeup())
    match result:
        case dispatch.Dispatched(shipment_id=shipment_id):
            return _shipment(order_id, shipment_id, replayed=False)
        case dispatch.Replayed(shipment_id=shipment_id):
            return _shipment(order_id, shipment_id, replayed=True)
        case dispatch.KeyReused():
            raise _key_reused(key, "shipment")
        case dispatch.NotFound():
            raise ApiProblem("not_found", ORDER_GONE)
        case dispatch.NotDispatchable(status=status):
            raise ApiProblem(
                "order_not_dispatchable",
                f"The order is {status}: only a CONFIRMADO or DESPACHADO_PARCIAL order can be dispatched. Nothing was kept.",
            )
        case dispatch.ExceedsRemaining(lines=lines):
            raise ApiProblem(
                "exceeds_remaining",
                "A line asks for more units than remain to dispatch; nothing was kept (see remaining).",
                extra={"remaining": [{"sku": sku, "quantity": asked, "remaining": left} for sku, asked, left in lines]},
            )
        case dispatch.Invalid(errors=errors):
            raise ApiProblem(
                "invalid_request",  # CONTRACT.md: a SKU not in the order is malformed input, as on the page
                "The shipment names a SKU that is not pending in this order, or one SKU twice; nothing was kept.",
                errors={name: [message] for name, message in errors.items()},
            )


def shipment(order_id: uuid.UUID, shipment_id: uuid.UUID):
    """200 with one shipment of the order (where a 201's Location points), else 404."""
    with get_db().reading_one() as conn:
        row = shipments.shipment(conn, shipment_id)
    if row is None or row["order_id"] != order_id:
        raise ApiProblem("not_found", "No such shipment of this order.")
    return json_response(row)


def pay(principal: Principal, client_id: uuid.UUID, key: uuid.UUID, body: PaymentIn):
    """Record what the client paid: 201 with the payment and the exposure now, once per Idempotency-Key."""
    cmd = payments.RecordPayment(
        client_id,
        body.amount_cents,
        body.reference,
        principal.user.id,
        principal.user.username,
        idempotency_key=key,
        api_key_id=principal.key_id,
    )
    with lock_waits_answered("payment", claim_relation="payment"):
        result = payments.record_payment(BoundedLockWait(get_db()), cmd)
    match result:
        case payments.PaymentRecorded(payment_id=payment_id):
            return _payment(payment_id, replayed=False)
        case payments.PaymentReplayed(payment_id=payment_id):
            return _payment(payment_id, replayed=True)
        case payments.PaymentKeyReused():
            raise _key_reused(key, "payment")
        case payments.ExceedsExposure(exposure_cents=owed):
            raise ApiProblem(
                "payment_exceeds_exposure",
                f"The payment is more than the client owes ({owed} cents); nothing was kept.",
                extra={"exposure_cents": owed},
            )
        case payments.ClientNotFound():
            raise ApiProblem("not_found", "No such client.")


def _shipment(order_id: uuid.UUID, shipment_id: uuid.UUID, *, replayed: bool):
    with get_db().reading_one() as conn:
        row = shipments.shipment(conn, shipment_id)
    return json_response(row, 201, _created(f"/api/v1/orders/{order_id}/shipments/{shipment_id}", replayed))


def _payment(payment_id: uuid.UUID, *, replayed: bool):
    with get_db().reading_one() as conn:
        row = repo.payment(conn, payment_id)
    return json_response(row, 201, _created(None, replayed))


def _created(location: str | None, replayed: bool) -> dict:
    headers = {"Location": location} if location else {}
    if replayed:
        headers["Idempotent-Replayed"] = "true"  # the first request's effect, not a second one (ADR-015)
    return headers


def _key_reused(key: uuid.UUID, what: str) -> ApiProblem:
    return ApiProblem(
        "idempotency_key_reused", f"Idempotency-Key {key} was already used for another {what}. Use a new key for a new {what}."
    )
