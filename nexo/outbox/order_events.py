"""The two events a confirmed order owes the outside world (ADR-004), built in one place.

Order entry (an order confirmed at once) and the credit approval (an order that waited) both call
this, so the warehouse and the fiscal provider can never tell the two paths apart.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from nexo.outbox.repository import add_events

# One per destination: the warehouse prepares the order, the fiscal provider invoices it.
ORDER_CONFIRMED_EVENTS = ("order.handoff_requested", "billing.intent_recorded")


def order_payload(
    *,
    order_id,
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
        "client": {"id": str(client_id), "name": client_name, "tier": tier},
        "warehouse_id": warehouse_id,
        "currency": "ARS",
        "lines": [
            {"sku": sku, "quantity": quantity, "unit_price_cents": unit, "amount_cents": quantity * unit}
            for sku, quantity, unit in lines
        ],
        "total_cents": total_cents,
    }


def add_order_confirmed_events(conn, *, order_id, payload: dict, request_id: str | None) -> list[uuid.UUID]:
    """Write both events of a confirmed order in the caller's transaction (one statement); return their ids."""
    return add_events(conn, order_id=order_id, event_types=list(ORDER_CONFIRMED_EVENTS), payload=payload, request_id=request_id)
