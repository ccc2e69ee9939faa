"""Dispatch (guarantee 19): what left the warehouse consumes the order's firm reservation, in one transaction.

The warehouse says what left, per line (by default everything that remains). In one transaction: the
shipment and its lines, `on_hand` and `reserved` down together for those quantities (nexo/stock), the
order DESPACHADO_PARCIAL or DESPACHADO, the audit row. More than remains → exceeds_remaining, nothing
kept; an order that is not confirmed → order_not_dispatchable. An integration's retried shipment
(same Idempotency-Key, same body) is the same shipment (ADR-015's rules, for shipments).

Lock order: the order row, then its reservations and stock rows in the SKU lock order — a cancel of
the same order takes its row first too, so one of the two wins and the other sees what it did.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import dataclass
from typing import ClassVar

from nexo import audit
from nexo.db import Conn, OpensTransactions
from nexo.orders import repository as repo
from nexo.orders import shipments
from nexo.orders.fingerprint import normalise_sku
from nexo.outbox import webhooks
from nexo.outbox.wakeup import Wakeup
from nexo.states import DISPATCHABLE, OrderStatus
from nexo.stock import reservations as stock

log = logging.getLogger(__name__)
MAX_QUANTITY = 100_000  # an input sanity bound, as for order lines (nexo/orders/commands.py)


@dataclass(frozen=True)
class ShipLine:
    """One line of what left: a SKU of the order (any spelling) and how many units."""

    sku: str
    quantity: int


@dataclass(frozen=True)
class DispatchOrder:
    """Record what left the warehouse for an order; `lines` None means everything that remains."""

    order_id: uuid.UUID
    actor_id: int
    actor_username: str
    lines: tuple[ShipLine, ...] | None = None
    idempotency_key: uuid.UUID | None = None
    api_key_id: int | None = None
    correlation_id: str | None = None  # the request id, carried onto the webhook notice


@dataclass(frozen=True)
class Dispatched:
    """The shipment was recorded; the order is DESPACHADO_PARCIAL or DESPACHADO now."""

    shipment_id: uuid.UUID
    order_id: uuid.UUID
    status: OrderStatus
    event_ids: tuple[uuid.UUID, ...] = ()  # the integration's notices (ADR-022)
    outcome: ClassVar[str] = "dispatched"


@dataclass(frozen=True)
class Replayed:
    """The same Idempotency-Key and body again: the shipment it made, nothing applied twice."""

    shipment_id: uuid.UUID
    order_id: uuid.UUID
    outcome: ClassVar[str] = "replayed"


@dataclass(frozen=True)
class KeyReused:
    """The Idempotency-Key was used for another shipment (idempotency_key_reused); nothing kept."""

    outcome: ClassVar[str] = "key_reused"


@dataclass(frozen=True)
class NotFound:
    """No such order."""

    order_id: uuid.UUID
    outcome: ClassVar[str] = "not_found"


@dataclass(frozen=True)
class NotDispatchable:
    """The order is not confirmed (waiting, rejected, cancelled) or already all dispatched."""

    order_id: uuid.UUID
    status: OrderStatus
    outcome: ClassVar[str] = "not_dispatchable"


@dataclass(frozen=True)
class ExceedsRemaining:
    """A line asks for more than remains of it: (sku, asked, remaining) each; nothing kept."""

    lines: tuple[tuple[str, int, int], ...]
    outcome: ClassVar[str] = "exceeds_remaining"


@dataclass(frozen=True)
class Invalid:
    """Malformed: a SKU not in the order, a quantity that is not a whole number from 1, a SKU twice."""

    errors: dict[str, str]
    outcome: ClassVar[str] = "invalid"


DispatchResult = Dispatched | Replayed | KeyReused | NotFound | NotDispatchable | ExceedsRemaining | Invalid


def request_hash(order_id: uuid.UUID, lines: tuple[ShipLine, ...] | None) -> str:
    """What an Idempotency-Key stands for: this order and these lines (normalised SKU, sorted)."""
    body = {
        "order_id": str(order_id),
        "lines": None if lines is None else sorted([normalise_sku(line.sku), line.quantity] for line in lines),
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def dispatch_order(db: OpensTransactions, cmd: DispatchOrder, wakeup: Wakeup | None = None) -> DispatchResult:
    """Record the shipment (see the module docstring); every refusal leaves nothing behind."""
    with db.transaction() as tx:
        result = _dispatch(tx.conn, cmd)
        if isinstance(result, Dispatched):
            tx.commit()
    if isinstance(result, Dispatched) and result.event_ids and wakeup is not None:
        wakeup.request_delivery(list(result.event_ids))  # after the commit (ADR-004)
    log.info("dispatch order=%s actor=%s outcome=%s", cmd.order_id, cmd.actor_username, result.outcome)
    return result


def _validate(lines: tuple[ShipLine, ...] | None) -> dict[str, str]:
    if lines is None:
        return {}
    if not lines:
        return {"lines": "Indicá al menos una línea con lo que sale."}
    skus = [normalise_sku(line.sku) for line in lines]
    if len(set(skus)) != len(skus):
        return {"lines": "Cada producto va en una sola línea."}
    for line in lines:
        if isinstance(line.quantity, bool) or not isinstance(line.quantity, int) or not 0 < line.quantity <= MAX_QUANTITY:
            return {"lines": f"Cada cantidad debe ser un número entero entre 1 y {MAX_QUANTITY:,}.".replace(",", ".")}
    return {}


def _dispatch(conn: Conn, cmd: DispatchOrder) -> DispatchResult:
    order = repo.lock_order(conn, cmd.order_id)
    if order is None:
        return NotFound(cmd.order_id)  # before the lines: no such order is the first thing to say
    invalid = _validate(cmd.lines)
    if invalid:
        return Invalid(invalid)
    digest = request_hash(cmd.order_id, cmd.lines) if cmd.idempotency_key else None
    claim = shipments.claim_shipment(
        conn,
        shipment_id=uuid.uuid4(),
        order_id=cmd.order_id,
        actor_id=cmd.actor_id,
        api_key_id=cmd.api_key_id,
        idempotency_key=cmd.idempotency_key,
        request_hash=digest,
    )
    if not claim.inserted:
        same = claim.request_hash == digest and claim.order_id == cmd.order_id
        return Replayed(claim.shipment_id, claim.order_id) if same else KeyReused()
    if order["status"] not in DISPATCHABLE:
        return NotDispatchable(cmd.order_id, OrderStatus(order["status"]))
    held = {row["sku"]: row for row in stock.remaining(conn, cmd.order_id) if row["released_at"] is None}
    wanted = (
        {sku: row["remaining"] for sku, row in held.items()}
        if cmd.lines is None
        else {normalise_sku(line.sku): line.quantity for line in cmd.lines}
    )
    unknown = sorted(sku for sku in wanted if sku not in held)
    if unknown:
        return Invalid({"lines": "Estos productos no están pendientes en el pedido: " + ", ".join(unknown) + "."})
    over = tuple((sku, asked, held[sku]["remaining"]) for sku, asked in sorted(wanted.items()) if asked > held[sku]["remaining"])
    if over:
        return ExceedsRemaining(over)
    lines = [(held[sku]["product_id"], held[sku]["warehouse_id"], sku, qty) for sku, qty in sorted(wanted.items()) if qty]
    stock.consume(conn, cmd.order_id, [(product, warehouse, qty) for product, warehouse, _, qty in lines])
    shipments.add_lines(conn, claim.shipment_id, lines)
    complete = all(wanted.get(sku, 0) == row["remaining"] for sku, row in held.items())
    status = shipments.mark_dispatched(conn, cmd.order_id, complete=complete)
    audit.append(
        conn,
        actor=cmd.actor_username,
        action="order.dispatched",
        object_type="order",
        object_id=cmd.order_id,
        details={
            "shipment_id": str(claim.shipment_id),
            "lines": [{"sku": sku, "quantity": qty} for _, _, sku, qty in lines],
            "status": status,
            "api_key_id": cmd.api_key_id,
        },
    )
    notices = webhooks.notify(conn, cmd.order_id, "order.dispatched", request_id=cmd.correlation_id)  # ADR-022
    return Dispatched(claim.shipment_id, cmd.order_id, status, tuple(notices))
