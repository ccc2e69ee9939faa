"""Opening a dead letter: the durable half of an event's failure (guarantee 11, ADR-010).

Part of the outbox because an event never reaches FALLIDO without it: the relay calls it in the very
transaction that sets the status. Everything a person does next (list, replay, discard, purge) is
nexo/deadletters/.
"""

from __future__ import annotations

from uuid import UUID

from nexo import audit
from nexo.db import Conn, one_row
from nexo.outbox.partitions import LIVE_ATTEMPTS, LIVE_EVENTS
from nexo.outbox.storable import storable_text
from nexo.states import AttemptOutcome, DeadLetterStatus


def error_signature(destination: str, http_status: int | None, error_class: str | None) -> str:
    """Group key for similar failures: destination plus HTTP status, or the error class when there was none."""
    return f"{destination}:{http_status if http_status is not None else (error_class or 'desconocido')}"


def open_dead_letter(
    conn: Conn,
    *,
    event_id: UUID,
    destination: str,
    attempts: int,
    last_error: str | None,
    http_status: int | None,
    error_class: str | None,
) -> int:
    """Record that an event reached FALLIDO, with its audit row, in the caller's transaction.

    Must run in the same transaction that sets outbox_event.status = 'FALLIDO' (guarantee 11): either
    both the failure and its durable record exist, or neither does.
    """
    last_error = storable_text(last_error)
    opened = conn.execute(
        f"""
        INSERT INTO dead_letter (event_id, destination, attempts, last_error, http_status, error_signature,
                                 first_failed_at, last_failed_at)
        SELECT %(event_id)s, %(destination)s, %(attempts)s, %(last_error)s, %(http_status)s, %(signature)s,
               coalesce(min(a.started_at), now()), now()
          FROM {LIVE_ATTEMPTS} a
         WHERE a.event_id = %(event_id)s
           AND a.outcome = ANY(%(failed_outcomes)s)
           -- a replayed event starts a fresh cycle: count from the last dead letter's resolution
           AND a.started_at > coalesce((SELECT max(resolved_at) FROM dead_letter d
                                         WHERE d.event_id = %(event_id)s AND d.destination = %(destination)s),
                                       '-infinity')
        RETURNING id
        """,
        {
            "event_id": event_id,
            "destination": destination,
            "attempts": attempts,
            "last_error": last_error,
            "http_status": http_status,
            "signature": error_signature(destination, http_status, error_class),
            "failed_outcomes": [AttemptOutcome.REINTENTO, AttemptOutcome.FALLIDO, AttemptOutcome.SIN_RESULTADO],
        },
    )
    dead_letter_id = one_row(opened)["id"]
    audit.append(
        conn,
        actor=audit.SYSTEM_ACTOR,
        action="dead_letter.opened",
        object_type="dead_letter",
        object_id=dead_letter_id,
        details={
            "event_id": str(event_id),
            "destination": destination,
            "attempts": attempts,
            "http_status": http_status,
            "last_error": last_error or "",
        },
    )
    return dead_letter_id


def lock_pending_of_order(conn: Conn, order_id: UUID) -> list[int]:
    """Lock the pending dead letters of an order's events (a cancel takes them before the events, as a
    replay does: dead letter, then event; ADR-017); return their ids."""
    return [
        row["id"]
        for row in conn.execute(
            # a pending dead letter's event is FALLIDO, so live (ADR-019)
            f"SELECT d.id FROM dead_letter d JOIN {LIVE_EVENTS} e ON e.id = d.event_id"
            " WHERE e.aggregate_id = %s AND d.status = %s ORDER BY d.id FOR UPDATE OF d",
            [order_id, DeadLetterStatus.PENDING],
        ).fetchall()
    ]


ORDER_CANCELLED_NOTE = "retirada: el pedido se anuló antes de que llegara a destino"


def withdraw_pending(conn: Conn, *, event_ids: list[UUID], actor: str, note: str = ORDER_CANCELLED_NOTE) -> list[int]:
    """Resolve the pending dead letters of events withdrawn with their order's cancel (ADR-017) or their webhook
    subscription's end (ADR-022), audited: the event will never be delivered, so there is nothing left for a
    person to replay."""
    rows = conn.execute(
        "UPDATE dead_letter SET status = %s, resolved_at = now(), resolved_by = %s, resolution_note = %s"
        " WHERE event_id = ANY(%s::uuid[]) AND status = %s RETURNING id, event_id, destination",
        [DeadLetterStatus.RESOLVED, actor, note, list(event_ids), DeadLetterStatus.PENDING],
    ).fetchall()
    for row in rows:
        audit.append(
            conn,
            actor=actor,
            action="dead_letter.withdrawn",
            object_type="dead_letter",
            object_id=row["id"],
            details={"event_id": str(row["event_id"]), "destination": row["destination"]},
        )
    return [row["id"] for row in rows]
