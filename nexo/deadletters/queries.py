"""Read-only SQL for the dead-letter pages. Every list, count and group is scoped to named destinations."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from uuid import UUID

from psycopg.rows import DictRow

from nexo.db import Conn, one_row
from nexo.outbox.registry import NAMES
from nexo.states import DeadLetterStatus, sql_constant

DESTINATIONS = NAMES  # every query names its destinations (ADR-010); the list is the outbox's
STATUSES = tuple(DeadLetterStatus)
# The badge and the client filter read the pending dead letters from their partial indexes (migrations 0003
# and 0040, WHERE status = 'pending'): a constant, as the indexes spell it (nexo.states.sql_constant says why).
PENDING = sql_constant(DeadLetterStatus.PENDING)


@dataclass(frozen=True)
class ListFilter:
    """What the admin narrowed the list to; every field but destinations is optional."""

    destinations: tuple[str, ...] = DESTINATIONS
    status: DeadLetterStatus | None = None
    signature: str | None = None
    client_id: str | None = None
    failed_from: date | None = None
    failed_to: date | None = None  # inclusive: the whole day
    ids: tuple[int, ...] | None = field(default=None)


def pending_count(conn: Conn) -> int:
    """How many dead letters wait for a decision (Marta's navigation badge).

    Answered from the partial index dead_letter_one_pending_per_event (WHERE status = 'pending',
    migration 0003): its size is the number of pending dead letters, however many resolved ones exist.
    """
    return one_row(conn.execute(f"SELECT count(*) AS n FROM dead_letter WHERE status = {PENDING}"))["n"]


def _where(f: ListFilter) -> tuple[str, dict]:
    # Fixed SQL fragments chosen by which filters are set; the values themselves are always bound.
    clauses = ["d.destination = ANY(%(destinations)s)"]
    params: dict = {"destinations": list(f.destinations)}
    if f.status:
        clauses.append("d.status = %(status)s")
        params["status"] = f.status
    if f.signature:
        clauses.append("d.error_signature = %(signature)s")
        params["signature"] = f.signature
    if f.client_id:
        clauses.append("o.client_id = %(client_id)s")
        params["client_id"] = f.client_id
    if f.failed_from:
        clauses.append("d.last_failed_at >= %(failed_from)s::date")
        params["failed_from"] = f.failed_from
    if f.failed_to:
        clauses.append("d.last_failed_at < %(failed_to)s::date + 1")
        params["failed_to"] = f.failed_to
    if f.ids is not None:
        clauses.append("d.id = ANY(%(ids)s)")
        params["ids"] = list(f.ids)
    return " AND ".join(clauses), params


# A dead letter's event, found by its whole key: Postgres reads the one partition it is in (ADR-019). A
# lateral lookup of one row, not a plain join: joined on two columns, the planner multiplied their
# selectivities (it cannot use the foreign key's shape on a partitioned table), expected a few dozen rows
# of ten thousand and read every dead letter and every month to sort them (tests/integration/test_query_plans.py).
EVENT_OF_DEAD_LETTER = """JOIN LATERAL (SELECT * FROM outbox_event e
                     WHERE e.id = d.event_id AND e.settled_on = d.event_settled_on LIMIT 1) e ON true"""

_FROM = f"""
      FROM dead_letter d
      {EVENT_OF_DEAD_LETTER}
      JOIN orders o ON o.id = e.aggregate_id
      JOIN client c ON c.id = o.client_id
"""
# Filtered by client, the list goes the other way, from the client's orders to their events and then their
# dead letters, which the lateral lookup above would forbid: a plain join.
_FROM_BY_CLIENT = """
      FROM dead_letter d
      JOIN outbox_event e ON e.id = d.event_id AND e.settled_on = d.event_settled_on
      JOIN orders o ON o.id = e.aggregate_id
      JOIN client c ON c.id = o.client_id
"""


def _source(f: ListFilter) -> str:
    return _FROM_BY_CLIENT if f.client_id else _FROM


def count_capped(conn: Conn, f: ListFilter, cap: int) -> int:
    """How many dead letters match, counting at most cap + 1 (so a huge backlog costs a bounded count).

    Counted in the list's own order, so the count walks the same index as the page (newest failure
    first) and stops at cap + 1, instead of a scan that may read the whole history for a rare filter.
    """
    where, params = _where(f)
    # Only the client filter needs the joins: without it they cannot drop a row (every dead letter has
    # its event, order and client, by foreign keys), and the count reads the dead letters alone.
    source = _FROM_BY_CLIENT if f.client_id else "FROM dead_letter d"
    return one_row(
        conn.execute(
            f"SELECT count(*) AS n FROM (SELECT 1 {source} WHERE {where}"
            " ORDER BY d.last_failed_at DESC, d.id DESC LIMIT %(cap_plus_one)s) AS candidates",
            {**params, "cap_plus_one": cap + 1},
        )
    )["n"]


def list_page(conn: Conn, f: ListFilter, *, limit: int, offset: int) -> list[DictRow]:
    """One page of summaries, newest failure first. No payload: the list never shows it."""
    where, params = _where(f)
    return conn.execute(
        f"""
        SELECT d.id, d.destination, d.status, d.error_signature, d.last_error, d.http_status, d.attempts,
               d.first_failed_at, d.last_failed_at, d.resolved_at, d.resolved_by, d.resolution_note,
               d.event_id, e.event_type, o.id AS order_id, o.number AS order_number, o.total_cents, c.name AS client_name
        {_source(f)}
         WHERE {where}
         ORDER BY d.last_failed_at DESC, d.id DESC
         LIMIT %(limit)s OFFSET %(offset)s
        """,
        {**params, "limit": limit, "offset": offset},
    ).fetchall()


def pending_ids(conn: Conn, f: ListFilter, *, limit: int) -> list[int]:
    """Ids of the pending dead letters a bulk action would touch, oldest first, at most `limit`."""
    where, params = _where(ListFilter(**{**f.__dict__, "status": DeadLetterStatus.PENDING}))
    rows = conn.execute(
        f"SELECT d.id {_source(f)} WHERE {where} ORDER BY d.last_failed_at, d.id LIMIT %(limit)s",
        {**params, "limit": limit},
    ).fetchall()
    return [r["id"] for r in rows]


def groups(conn: Conn, *, destinations: tuple[str, ...], status: DeadLetterStatus = DeadLetterStatus.PENDING) -> list[DictRow]:
    """Dead letters counted by destination and error signature, biggest group first."""
    return conn.execute(
        """
        SELECT destination, error_signature, count(*) AS total,
               min(first_failed_at) AS first_failed_at, max(last_failed_at) AS last_failed_at,
               (array_agg(last_error ORDER BY last_failed_at DESC))[1] AS sample_error
          FROM dead_letter
         WHERE destination = ANY(%s) AND status = %s
         GROUP BY destination, error_signature
         ORDER BY count(*) DESC, destination, error_signature
        """,
        [list(destinations), status],
    ).fetchall()


def clients(conn: Conn, destinations: tuple[str, ...], selected: str | None = None) -> list[DictRow]:
    """Clients with a pending dead letter in these destinations (and the selected one), for the list's filter.

    Pending only: after years nearly every client has some resolved or discarded dead letter, so a
    list of them all would be every client and cost a read of the whole history on each page; the
    pending ones are what the admin works on. The selected client stays listed.
    """
    return conn.execute(
        f"""
        SELECT c.id, c.name {_FROM} WHERE d.destination = ANY(%(destinations)s) AND d.status = {PENDING}
         UNION
        SELECT id, name FROM client WHERE id = %(selected)s::uuid
         ORDER BY name
        """,
        {"destinations": list(destinations), "selected": selected},
    ).fetchall()


def dead_letter(conn: Conn, dead_letter_id: int) -> DictRow | None:
    """One dead letter with its event (payload included) and the order it belongs to."""
    return conn.execute(
        f"""
        SELECT d.*, e.event_type, e.payload, e.status AS event_status, e.attempts AS event_attempts,
               e.created_at AS event_created_at, e.delivered_at, e.next_attempt_at,
               o.id AS order_id, o.number AS order_number, o.status AS order_status, o.billing_status, o.total_cents,
               o.created_at AS order_created_at, o.warehouse_id, c.name AS client_name, c.tier AS client_tier,
               u.full_name AS salesperson_name, u.username AS salesperson_username
          FROM dead_letter d
          {EVENT_OF_DEAD_LETTER}
          JOIN orders o ON o.id = e.aggregate_id
          JOIN client c ON c.id = o.client_id
          JOIN app_user u ON u.id = o.salesperson_id
         WHERE d.id = %s
        """,
        [dead_letter_id],
    ).fetchone()


def attempts(conn: Conn, event_id: UUID, settled_on: date) -> list[DictRow]:
    """Every delivery attempt of an event, in the order they started (all cycles); `settled_on` is the
    event's (its dead letter's event_settled_on): only the partition holding them is read (ADR-019)."""
    return conn.execute(
        "SELECT attempt_no, worker, started_at, finished_at, outcome, http_status, error, duration_ms"
        "  FROM delivery_attempt WHERE event_id = %s AND event_settled_on = %s ORDER BY started_at, id",
        [event_id, settled_on],
    ).fetchall()


def siblings(conn: Conn, event_id: UUID, destination: str) -> list[DictRow]:
    """Every dead letter the same event had (one per FALLIDO cycle), newest first."""
    return conn.execute(
        "SELECT id, status, attempts, last_failed_at, resolved_at, resolved_by"
        "  FROM dead_letter WHERE event_id = %s AND destination = %s ORDER BY id DESC",
        [event_id, destination],
    ).fetchall()


def history(conn: Conn, dead_letter_id: int) -> list[DictRow]:
    """The audit trail of one dead letter: who did what, and why, oldest first."""
    return conn.execute(
        "SELECT occurred_at, actor, action, details FROM audit_log"
        " WHERE object_type = 'dead_letter' AND object_id = %s ORDER BY id",
        [str(dead_letter_id)],
    ).fetchall()
