"""The two events a confirmed order owes the outside world (ADR-004), built in one place.

Order entry (an order confirmed at once) and the credit approval (an order that waited) both call
this, so the warehouse and the fiscal provider can never tell the two paths apart.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from nexo.db import Conn
from nexo.formatting import format_order_number
from nexo.outbox import repository
from nexo.outbox.dead_letter import lock_pending_of_order, withdraw_pending
from nexo.outbox.registry import CANCELLATION_OF, route
from nexo.outbox.repository import add_events
from nexo.states import EventStatus

# One per destination: the warehouse prepares the order, the fiscal provider invoices it.
ORDER_CONFIRMED_EVENTS = ("order.handoff_requested", "billing.intent_recorded")


def order_payload(
    *,
    order_id,
    number: int,
    client_id,
    client_name: str,
    tier: str,
    warehouse_id: str,
    lines: Iterable[tuple[str, int, int]],
    total_cents: int,
) -> dict:
    """What the warehouse needs to prepare and the fiscal provider to invoice; lines are (sku, qty, unit cents)."""
    return {
        "order_id": str(order_id),
        "order_number": format_order_number(number),  # what people say on the phone (ADR-020)
        "client": {"id": str(client_id), "name": client_name, "tier": tier},
        "warehouse_id": warehouse_id,
        "currency": "ARS",
        "lines": [
            {"sku": sku, "quantity": quantity, "unit_price_cents": unit, "amount_cents": quantity * unit}
            for sku, quantity, unit in lines
        ],
        "total_cents": total_cents,
    }


def add_order_confirmed_events(conn: Conn, *, order_id: uuid.UUID, payload: dict, request_id: str | None) -> list[uuid.UUID]:
    """Write both events of a confirmed order in the caller's transaction (one statement); return their ids."""
    return add_events(conn, order_id=order_id, event_types=list(ORDER_CONFIRMED_EVENTS), payload=payload, request_id=request_id)


@dataclass(frozen=True)
class CancelledEvents:
    """What a cancel did to the order's events: withdrawn (never sent, or sent and now overtaken) and the
    cancellations written, one per destination that may hold the original's effect (ADR-017)."""

    withdrawn: tuple[uuid.UUID, ...]
    cancellations: tuple[uuid.UUID, ...]
    dead_letters_withdrawn: tuple[int, ...]


def cancel_order_events(
    conn: Conn, *, order_id: uuid.UUID, entered_at: datetime, actor: str, reason: str, request_id: str | None
) -> CancelledEvents:
    """In the cancel's transaction, after its order row is locked: withdraw what has not been delivered and
    write a cancellation for every original a destination may hold (ADR-017).

    - delivered: its cancellation goes out, after it (it is already there);
    - never tried and not being tried: withdrawn, no cancellation: that destination sees neither;
    - tried but not delivered (retrying, in flight, or failed with a dead letter): withdrawn — its dead
      letter resolved, so nobody replays it — and a cancellation written that waits until no worker can
      still be sending the original; the destination answers it with the effect undone, or with "never
      applied" (then nothing was there and nothing is done).
    Lock order: pending dead letters, then events (a replay takes dead letter, then event).
    """
    lock_pending_of_order(conn, order_id)
    events = repository.lock_order_events(conn, order_id, entered_at=entered_at)
    originals = [e for e in events if e["event_type"] in CANCELLATION_OF and e["status"] != EventStatus.RETIRADO]
    undelivered = [e for e in originals if e["status"] != EventStatus.ENTREGADO]
    reached = [e for e in originals if e["status"] == EventStatus.ENTREGADO or e["attempts"] > 0 or e["in_flight"]]
    repository.withdraw(conn, [e["id"] for e in undelivered])
    withdrawn_letters = withdraw_pending(conn, event_ids=[e["id"] for e in undelivered], actor=actor)
    cancellations = []
    for original in reached:
        cancellation = route(CANCELLATION_OF[original["event_type"]])
        payload = {"order_id": str(order_id), cancellation.cancels: str(original["id"]), "reason": reason}
        cancellations.append(
            repository.add_event(
                conn,
                order_id=order_id,
                event_type=cancellation.event_type,
                payload=payload,
                request_id=request_id,
                depends_on=original["id"],
            )
        )
    return CancelledEvents(tuple(e["id"] for e in undelivered), tuple(cancellations), tuple(withdrawn_letters))
