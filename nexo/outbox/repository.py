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


# --- The relay's SQL (guarantee 9). Each function is one statement; the relay service owns the transaction.

CLAIM_SQL = """
WITH claimed AS (
    UPDATE outbox_event
       SET locked_until = now() + make_interval(secs => %(lease_s)s),
           claim_token = gen_random_uuid(),
           attempts = attempts + 1
     WHERE id IN (SELECT id FROM outbox_event
                   WHERE status = 'PENDIENTE'
                     AND next_attempt_at <= now()
                     AND (locked_until IS NULL OR locked_until < now())
                     AND (%(ids)s::uuid[] IS NULL OR id = ANY(%(ids)s::uuid[]))
                   ORDER BY next_attempt_at
                   LIMIT %(limit)s
                   FOR UPDATE SKIP LOCKED)
    RETURNING id, aggregate_id, event_type, destination, payload, attempts, claim_token, request_id,
              attempts - cycle_started_attempts AS cycle_attempts
), attempt AS (
    INSERT INTO delivery_attempt (event_id, attempt_no, claim_token, worker, started_at)
    SELECT id, attempts, claim_token, %(worker)s, clock_timestamp() FROM claimed
    RETURNING id AS attempt_id, event_id
)
SELECT claimed.*, attempt.attempt_id FROM claimed JOIN attempt ON attempt.event_id = claimed.id
"""


def claim_due(conn, *, lease_s: float, worker: str, limit: int = 1, ids=None) -> list[dict]:
    """Lease up to `limit` due PENDIENTE events (optionally only these ids) and open their attempt rows.

    SKIP LOCKED lets any number of workers and sweepers claim side by side without waiting on each
    other; a fresh claim_token fences whatever a previous, expired claimant may still write.
    """
    return conn.execute(CLAIM_SQL, {"lease_s": lease_s, "worker": worker, "limit": limit,
                                    "ids": [str(i) for i in ids] if ids is not None else None}).fetchall()


def due_event_ids(conn, *, limit: int, grace_s: float = 0.0) -> list[dict]:
    """Due PENDIENTE events nobody holds a live lease on (the sweeper's look-up; it locks nothing)."""
    return conn.execute(
        "SELECT id, request_id FROM outbox_event"
        " WHERE status = 'PENDIENTE' AND next_attempt_at <= now() - make_interval(secs => %s)"
        "   AND (locked_until IS NULL OR locked_until < now())"
        " ORDER BY next_attempt_at LIMIT %s", [grace_s, limit]).fetchall()


def mark_delivered(conn, event_id, claim_token) -> dict | None:
    """ENTREGADO, only if this claim is still the current one; None when the lease was lost."""
    return conn.execute(
        "UPDATE outbox_event SET status = 'ENTREGADO', delivered_at = now(), locked_until = NULL, last_error = NULL"
        " WHERE id = %s AND claim_token = %s AND status = 'PENDIENTE'"
        " RETURNING id, aggregate_id, destination, attempts", [event_id, claim_token]).fetchone()


def mark_retry(conn, event_id, claim_token, *, delay_s: float, error: str) -> dict | None:
    """Back to PENDIENTE after delay_s (exponential backoff), only if this claim is still the current one."""
    return conn.execute(
        "UPDATE outbox_event SET next_attempt_at = now() + make_interval(secs => %s), locked_until = NULL,"
        " last_error = %s WHERE id = %s AND claim_token = %s AND status = 'PENDIENTE'"
        " RETURNING id, aggregate_id, destination, attempts", [delay_s, error, event_id, claim_token]).fetchone()


def mark_failed(conn, event_id, claim_token, *, error: str) -> dict | None:
    """FALLIDO, only if this claim is still the current one (the caller opens the dead letter)."""
    return conn.execute(
        "UPDATE outbox_event SET status = 'FALLIDO', locked_until = NULL, last_error = %s"
        " WHERE id = %s AND claim_token = %s AND status = 'PENDIENTE'"
        " RETURNING id, aggregate_id, destination, attempts", [error, event_id, claim_token]).fetchone()


def close_attempt(conn, attempt_id: int, *, outcome: str, http_status: int | None, error: str | None,
                  duration_ms: int) -> None:
    """Write how one delivery attempt ended."""
    conn.execute(
        "UPDATE delivery_attempt SET finished_at = clock_timestamp(), outcome = %s, http_status = %s, error = %s,"
        " duration_ms = %s WHERE id = %s", [outcome, http_status, error, duration_ms, attempt_id])


def record_invoice(conn, order_id, invoice_number: str) -> None:
    """The fiscal provider's effect on the order: billed, with its invoice number."""
    conn.execute("UPDATE orders SET billing_status = 'FACTURADO', invoice_number = %s WHERE id = %s",
                 [invoice_number, order_id])


def record_handoff(conn, order_id, ticket: str) -> None:
    """The warehouse's effect on the order: the preparation ticket Sergio works from."""
    conn.execute("UPDATE orders SET handoff_ticket = %s WHERE id = %s", [ticket, order_id])
