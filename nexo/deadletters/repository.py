"""SQL for dead letters. Every query is scoped to one destination (ADR-021's per-group isolation)."""

from __future__ import annotations

from nexo import audit
from nexo.outbox.storable import storable_text


def error_signature(destination: str, http_status: int | None, error_class: str | None) -> str:
    """Group key for similar failures: destination plus HTTP status, or the error class when there was none."""
    return f"{destination}:{http_status if http_status is not None else (error_class or 'desconocido')}"


def open_dead_letter(conn, *, event_id, destination: str, attempts: int, last_error: str | None,
                     http_status: int | None, error_class: str | None) -> int:
    """Record that an event reached FALLIDO, with its audit row, in the caller's transaction.

    Must run in the same transaction that sets outbox_event.status = 'FALLIDO' (guarantee 11): either
    both the failure and its durable record exist, or neither does.
    """
    last_error = storable_text(last_error)
    row = conn.execute(
        """
        INSERT INTO dead_letter (event_id, destination, attempts, last_error, http_status, error_signature,
                                 first_failed_at, last_failed_at)
        SELECT %(event_id)s, %(destination)s, %(attempts)s, %(last_error)s, %(http_status)s, %(signature)s,
               coalesce(min(a.started_at), now()), now()
          FROM delivery_attempt a
         WHERE a.event_id = %(event_id)s
           AND a.outcome IN ('REINTENTO', 'FALLIDO', 'SIN_RESULTADO')
           -- a replayed event starts a fresh cycle: count from the last dead letter's resolution
           AND a.started_at > coalesce((SELECT max(resolved_at) FROM dead_letter d
                                         WHERE d.event_id = %(event_id)s AND d.destination = %(destination)s),
                                       '-infinity')
        RETURNING id
        """,
        {"event_id": event_id, "destination": destination, "attempts": attempts, "last_error": last_error,
         "http_status": http_status, "signature": error_signature(destination, http_status, error_class)},
    ).fetchone()
    dead_letter_id = row["id"]
    audit.append(conn, actor=audit.SYSTEM_ACTOR, action="dead_letter.opened", object_type="dead_letter",
                 object_id=dead_letter_id,
                 details={"event_id": str(event_id), "destination": destination, "attempts": attempts,
                          "http_status": http_status, "last_error": last_error or ""})
    return dead_letter_id


def resolve_pending(conn, *, dead_letter_id: int, destination: str, status: str, actor: str,
                    note: str | None) -> dict | None:
    """Move one pending dead letter to a terminal status; None when it was not pending any more.

    The `status = 'pending'` condition is the whole concurrency control (ADR-021 phase 5): two admins
    acting at once serialise on the row, and the second one's UPDATE finds nothing to change.
    """
    return conn.execute(
        """
        UPDATE dead_letter
           SET status = %(status)s, resolved_at = now(), resolved_by = %(actor)s, resolution_note = %(note)s
         WHERE id = %(id)s AND destination = %(destination)s AND status = 'pending'
        RETURNING id, event_id, destination, attempts, error_signature
        """,
        {"status": status, "actor": actor, "note": note, "id": dead_letter_id, "destination": destination},
    ).fetchone()


def resolve_pending_many(conn, *, dead_letter_ids: list[int], destination: str, status: str, actor: str,
                         note: str | None) -> list[dict]:
    """Move the listed pending dead letters of one destination to a terminal status; return those moved.

    Rows are locked in id order so that two bulk actions over overlapping groups never deadlock; rows
    that stopped being pending meanwhile are skipped, never overwritten.
    """
    return conn.execute(
        """
        WITH locked AS (
            SELECT id FROM dead_letter
             WHERE id = ANY(%(ids)s) AND destination = %(destination)s AND status = 'pending'
             ORDER BY id
               FOR UPDATE)
        UPDATE dead_letter d
           SET status = %(status)s, resolved_at = now(), resolved_by = %(actor)s, resolution_note = %(note)s
          FROM locked
         WHERE d.id = locked.id AND d.status = 'pending'
        RETURNING d.id, d.event_id, d.destination, d.attempts, d.error_signature
        """,
        {"ids": list(dead_letter_ids), "destination": destination, "status": status, "actor": actor,
         "note": note},
    ).fetchall()


def requeue_events(conn, *, event_ids: list, destination: str) -> int:
    """Put FALLIDO events of one destination back to PENDIENTE, due now, with no lease; return how many.

    `attempts` and the delivery_attempt rows are left as they are: attempts counts every try
    (CONTRACT.md) and the history of the failed cycle stays readable on the detail page. The relay's
    budget and backoff restart, though: the event gets a fresh cycle of RELAY_MAX_ATTEMPTS tries.
    """
    return conn.execute(
        """
        UPDATE outbox_event
           SET status = 'PENDIENTE', next_attempt_at = now(), locked_until = NULL, claim_token = NULL,
               cycle_started_attempts = attempts
         WHERE id = ANY(%s) AND destination = %s AND status = 'FALLIDO'
        """,
        [list(event_ids), destination],
    ).rowcount


def current_state(conn, dead_letter_id: int) -> dict | None:
    """Status, destination and resolution of one dead letter (None if it does not exist)."""
    return conn.execute(
        "SELECT id, event_id, destination, status, resolved_by, resolved_at, resolution_note"
        "  FROM dead_letter WHERE id = %s",
        [dead_letter_id],
    ).fetchone()


def _check_days(days: int) -> None:
    # ADR-021 MVP-3: 0 or a negative number would turn "older than N days" into "everything", so the
    # purge refuses it here, before any SQL runs, whatever the settings said.
    if not isinstance(days, int) or isinstance(days, bool) or days < 1:
        raise ValueError(f"retention needs a whole number of days, at least 1 (got {days!r})")


def purge_terminal_dead_letters(conn, *, destination: str, grace_days: int, batch: int = 1000) -> list[int]:
    """Delete up to `batch` resolved/discarded dead letters of one destination resolved over grace_days ago; return their ids.

    'pending' is never in the WHERE: a dead letter nobody decided on is kept for ever (ADR-021 MVP-3).
    The audit log keeps the trace of each one; this only drops the working row.
    """
    _check_days(grace_days)
    rows = conn.execute(
        """
        DELETE FROM dead_letter
         WHERE id IN (SELECT id FROM dead_letter
                       WHERE destination = %(destination)s
                         AND status IN ('resolved', 'discarded')
                         AND resolved_at < now() - make_interval(days => %(days)s)
                       ORDER BY resolved_at
                       LIMIT %(batch)s)
        RETURNING id
        """,
        {"destination": destination, "days": grace_days, "batch": batch},
    ).fetchall()
    return [r["id"] for r in rows]


def purge_delivered_events(conn, *, destination: str, older_than_days: int, batch: int = 1000) -> list:
    """Delete up to `batch` ENTREGADO events of one destination delivered over older_than_days ago; return their ids.

    Events that still have a dead-letter row are skipped: deleting them would cascade to a resolved
    dead letter still inside its grace. They go once the dead-letter purge has removed those rows.
    Their delivery attempts go with them (ON DELETE CASCADE); the audit log keeps its rows.
    """
    _check_days(older_than_days)
    rows = conn.execute(
        """
        DELETE FROM outbox_event
         WHERE id IN (SELECT e.id FROM outbox_event e
                       WHERE e.destination = %(destination)s
                         AND e.status = 'ENTREGADO'
                         AND e.delivered_at < now() - make_interval(days => %(days)s)
                         AND NOT EXISTS (SELECT 1 FROM dead_letter d WHERE d.event_id = e.id)
                       ORDER BY e.delivered_at
                       LIMIT %(batch)s)
        RETURNING id
        """,
        {"destination": destination, "days": older_than_days, "batch": batch},
    ).fetchall()
    return [r["id"] for r in rows]
