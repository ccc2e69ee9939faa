"""SQL for dead letters. Every query is scoped to one destination (ADR-010's isolation per destination).

Dead letters are opened by the outbox when an event fails (nexo/outbox/dead_letter.py); the rows of
outbox_event are written only by nexo/outbox (requeue on replay, purge of delivered events).
"""

from __future__ import annotations

from psycopg.rows import DictRow

from nexo.db import Conn
from nexo.outbox.repository import check_retention_days
from nexo.states import DeadLetterStatus, sql_constant

# The purge reads migration 0040's partial index dead_letter_terminal_resolved_idx (WHERE status <>
# 'pending'), which the planner matches only to constants (nexo.states.sql_constant says why).
TERMINAL = sql_constant(DeadLetterStatus.RESOLVED, DeadLetterStatus.DISCARDED)


def resolve_pending(
    conn: Conn, *, dead_letter_id: int, destination: str, status: DeadLetterStatus, actor: str, note: str | None
) -> DictRow | None:
    """Move one pending dead letter to a terminal status; None when it was not pending any more.

    The `status = 'pending'` condition is the whole concurrency control (ADR-010): two admins
    acting at once serialise on the row, and the second one's UPDATE finds nothing to change.
    """
    return conn.execute(
        """
        UPDATE dead_letter
           SET status = %(status)s, resolved_at = now(), resolved_by = %(actor)s, resolution_note = %(note)s
         WHERE id = %(id)s AND destination = %(destination)s AND status = %(pending)s
        RETURNING id, event_id, destination, attempts, error_signature
        """,
        {
            "status": status,
            "actor": actor,
            "note": note,
            "id": dead_letter_id,
            "destination": destination,
            "pending": DeadLetterStatus.PENDING,
        },
    ).fetchone()


def resolve_pending_many(
    conn: Conn, *, dead_letter_ids: list[int], destination: str, status: DeadLetterStatus, actor: str, note: str | None
) -> list[DictRow]:
    """Move the listed pending dead letters of one destination to a terminal status; return those moved.

    Rows are locked in id order so that two bulk actions over overlapping groups never deadlock; rows
    that stopped being pending meanwhile are skipped, never overwritten.
    """
    return conn.execute(
        """
        WITH locked AS (
            SELECT id FROM dead_letter
             WHERE id = ANY(%(ids)s) AND destination = %(destination)s AND status = %(pending)s
             ORDER BY id
               FOR UPDATE)
        UPDATE dead_letter d
           SET status = %(status)s, resolved_at = now(), resolved_by = %(actor)s, resolution_note = %(note)s
          FROM locked
         WHERE d.id = locked.id AND d.status = %(pending)s
        RETURNING d.id, d.event_id, d.destination, d.attempts, d.error_signature
        """,
        {
            "ids": list(dead_letter_ids),
            "destination": destination,
            "status": status,
            "actor": actor,
            "note": note,
            "pending": DeadLetterStatus.PENDING,
        },
    ).fetchall()


def current_state(conn: Conn, dead_letter_id: int) -> DictRow | None:
    """Status, destination, resolution and event type of one dead letter (None if it does not exist)."""
    return conn.execute(
        "SELECT id, event_id, destination, status, resolved_by, resolved_at, resolution_note,"
        "       (SELECT e.event_type FROM outbox_event e"
        "         WHERE e.id = d.event_id AND e.settled_on = d.event_settled_on) AS event_type"
        "  FROM dead_letter d WHERE id = %s",
        [dead_letter_id],
    ).fetchone()


def purge_terminal_dead_letters(conn: Conn, *, destination: str, grace_days: int, batch: int = 1000) -> list[int]:
    """Delete up to `batch` resolved/discarded dead letters of one destination resolved over grace_days ago; return their ids.

    'pending' is never in the WHERE: a dead letter nobody decided on is kept for ever (ADR-010, retention).
    The audit log keeps the trace of each one; this only drops the working row.
    """
    check_retention_days(grace_days)
    rows = conn.execute(
        f"""
        DELETE FROM dead_letter
         WHERE id IN (SELECT id FROM dead_letter
                       WHERE destination = %(destination)s
                         AND status IN ({TERMINAL})
                         AND resolved_at < now() - make_interval(days => %(days)s)
                       ORDER BY resolved_at
                       LIMIT %(batch)s)
        RETURNING id
        """,
        {"destination": destination, "days": grace_days, "batch": batch},
    ).fetchall()
    return [r["id"] for r in rows]
