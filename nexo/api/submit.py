"""POST /api/v1/orders: the order form's use case (create_order) with the Idempotency-Key as its requestId.

No second implementation of order entry: this module only builds the CreateOrder command, bounds how
long a retry waits for the first request with its key, and maps the use case's outcome to HTTP
(docs/adr/ADR-015).
"""

from __future__ import annotations

import logging
import uuid
from contextlib import contextmanager

from flask import g
from psycopg.errors import LockNotAvailable

from nexo.api import read_models
from nexo.api.http import json_response
from nexo.api.keys import Principal
from nexo.api.problems import ApiProblem
from nexo.api.schemas import OrderIn
from nexo.db import Database
from nexo.extensions import get_db, get_wakeup
from nexo.orders import commands, service

log = logging.getLogger(__name__)

# How long a request waits for a lock inside the order transaction. The lock that matters is the one a
# retry takes on its Idempotency-Key while the first request with that key is still running (ADR-007's
# claim): an order transaction lasts milliseconds, so 2 s covers any healthy first request (the retry
# then replays it) and bounds a stuck one (→ 409 request_in_progress), see ADR-015.
LOCK_WAIT_MS = 2000
RETRY_AFTER_S = "1"


class _BoundedLockWait:
    """The Database create_order runs on, with every lock wait of its transaction bounded."""

    def __init__(self, db: Database, lock_wait_ms: int) -> None:
        self._db, self._lock_wait_ms = db, lock_wait_ms

    @contextmanager
    def transaction(self):
        """db.transaction() with `SET LOCAL lock_timeout` first (it ends with the transaction)."""
        with self._db.transaction() as tx:
            tx.execute("SELECT set_config('lock_timeout', %s, true)", [f"{self._lock_wait_ms}ms"])
            yield tx


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
    try:
        result = service.create_order(_BoundedLockWait(get_db(), LOCK_WAIT_MS), cmd, get_wakeup())
    except LockNotAvailable as exc:
        # Nothing was kept (the transaction rolled back). Which lock: the key's, or a stock/credit row.
        if "idempotency_keys" in (exc.diag.context or ""):
            raise ApiProblem(
                "request_in_progress",
                "A request with this Idempotency-Key is still being processed; send the same request again after Retry-After.",
                headers={"Retry-After": RETRY_AFTER_S},
            ) from None
        log.warning("api order request=%s waited over %d ms for a row lock: %s", key, LOCK_WAIT_MS, exc.diag.context)
        raise ApiProblem(
            "unavailable",
            "Nexo is too busy to take this order now; nothing was kept. Send the same request again after Retry-After.",
            headers={"Retry-After": RETRY_AFTER_S},
        ) from None
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
        case commands.Invalid(field_errors=field_errors):
            raise ApiProblem(
                "invalid_request",
                "The order refers to something that does not exist.",
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
