"""SQL for writing outbox events. The caller owns the transaction (ADR-004)."""

from __future__ import annotations

import uuid

from psycopg.types.json import Jsonb

# Each event type has exactly one destination (the fake or, one day, the real provider).
DESTINATIONS = {
    "order.handoff_requested": "warehouse",
    "billing.intent_recorded": "fiscal",
}


def add_event(conn, *, order_id, event_type: str, payload: dict, request_id: str | None = None) -> uuid.UUID:
    """Insert one PENDIENTE event in the caller's transaction and return its id (the Idempotency-Key)."""
    event_id = uuid.uuid4()
    conn.execute(
        "INSERT INTO outbox_event (id, aggregate_id, event_type, destination, payload, request_id)"
        " VALUES (%s, %s, %s, %s, %s, %s)",
        [event_id, order_id, event_type, DESTINATIONS[event_type], Jsonb(payload), request_id])
    return event_id
