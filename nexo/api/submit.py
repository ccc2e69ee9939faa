"""POST /api/v1/orders: the order form's use case (create_order) with the Idempotency-Key as its requestId.

No second implementation of order entry: this module only builds the CreateOrder command, bounds how
long a retry waits for the first request with its key, and maps the use case's outcome to HTTP
(docs/adr/ADR-015).
"""

from __future__ import annotations

import uuid

from flask import g

from nexo.api import read_models
from nexo.api.http import json_response
from nexo.api.keys import Principal
from nexo.api.lock_wait import BoundedLockWait, lock_waits_answered
from nexo.api.problems import ApiProblem
from nexo.api.schemas import OrderIn
from nexo.extensions import get_db, get_wakeup, mail_enabled
from nexo.orders import commands, service


def submit_order(principal: Principal, key: uuid.UUID, body: OrderIn):
    """Run create_order for this key and body as the key's user, and answer as CONTRACT.md says."""
    cmd = commands.CreateOrder(
        request_id=key,
        client_id=body.client_id,
        warehouse_id=body.deposit_id,
        lines=tuple(commands.OrderLineRequest(line.sku, line.quantity) for line in body.lines),
        salesperson_id=principal.user.id,
        delivery_method=(body.delivery_method or "").strip() or None,
        correlation_id=g.get("request_id"),
        api_key_id=principal.key_id,
    )
    # Waits on the key's claim are bounded: a stuck first request → 409, a stuck stock or client row → 503.
    with lock_waits_answered("order", claim_relation="idempotency_keys"):
        result = service.create_order(BoundedLockWait(get_db()), cmd, get_wakeup(), mail=mail_enabled())
    return _respond(principal, key, result)


def _respond(principal: Principal, key: uuid.UUID, result: commands.OrderResult):
    match result:
        case commands.Confirmed(order_id=order_id) | commands.PendingAuthorization(order_id=order_id):
            return _order(principal, key, order_id, replayed=False)
        case commands.Replayed(order_id=order_id):
            return _order(principal, key, order_id, replayed=True)
        case commands.Conflict():
            return _reused(key)
        case commands.Rejected(problems=problems):
            detail = "; ".join(f"{p.sku}: {p.reason}" for p in problems)
            raise ApiProblem(
                result.reasons[0],
                f"Order refused, nothing kept ({detail}). The same Idempotency-Key may be sent again and is evaluated anew.",
                extra={"problems": [{"sku": p.sku, "reason": p.reason} for p in problems]},
            )
        case commands.Invalid(field_errors=field_errors) if set(field_errors) <= {"client_id", "deposit_id"}:
            raise ApiProblem(
                "unknown_reference",
                "The order names a client or a warehouse that does not exist; nothing was kept.",
                errors={name: [message] for name, message in field_errors.items()},
            )
        case commands.Invalid(field_errors=field_errors):
            raise ApiProblem(
                "inconsistent_request",
                "The order's lines cannot be taken as they are (a SKU on two lines, a SKU of spaces); see errors.",
                errors={name: [message] for name, message in field_errors.items()},
            )


def _order(principal: Principal, key: uuid.UUID, order_id, *, replayed: bool):
    """201 with the order as it is now (ADR-015); a replay says so in Idempotent-Replayed."""
    with get_db().reading_one() as conn:
        order = read_models.visible_order(conn, order_id, principal.user)
    if order is None:
        # A key another user's order already holds: replaying it would show them that order.
        return _reused(key)
    headers = {"Location": f"/api/v1/orders/{order_id}"}
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    return json_response(order, 201, headers)


def _reused(key: uuid.UUID):
    raise ApiProblem(
        "idempotency_key_reused", f"Idempotency-Key {key} was already used for another order. Use a new key for a new order."
    )
