"""Read-only SQL for the warehouse page. Callers pass a connection; nothing here writes."""

from __future__ import annotations

from psycopg.rows import DictRow

from nexo.db import Conn, one_row
from nexo.outbox.partitions import LIVE_EVENTS  # handoffs on the way or failed are live (ADR-019)
from nexo.states import DISPATCHABLE, EventStatus, sql_constant

PAGE_SIZE = 50
TO_PREPARE_COUNT_CAP = 1_000  # handoffs counted one by one at most (as the dead-letter list); beyond, "more than"
# Each list and count reads the partial index of its state (migrations 0003, 0080, 0110): constants, as the
# indexes spell them (nexo.states.sql_constant says why). The orders the warehouse still has to prepare are
# nexo.states.DISPATCHABLE with a ticket: the warehouse system received the handoff.
TO_PREPARE = f"status IN ({sql_constant(*DISPATCHABLE)}) AND handoff_ticket IS NOT NULL"
ENTREGADO = sql_constant(EventStatus.ENTREGADO)
PENDIENTE = sql_constant(EventStatus.PENDIENTE)
FALLIDO = sql_constant(EventStatus.FALLIDO)
# One deposit (its code), or every deposit when the parameter is NULL.
_IN_DEPOSIT = "(%(deposit)s::text IS NULL OR warehouse_id = %(deposit)s)"


def warehouses(conn: Conn) -> list[DictRow]:
    """The deposits (code and name), for the page's choice of deposit."""
    return conn.execute("SELECT id, name FROM warehouse ORDER BY id").fetchall()


def handoffs_to_prepare(conn: Conn, deposit: str | None, *, limit: int = PAGE_SIZE, offset: int = 0) -> list[DictRow]:
    """Orders the warehouse system received (a ticket exists) and the warehouse has not fully dispatched, of one
    deposit (None: every one), oldest first (first in, first out), with their lines and when the handoff arrived.

    The page is picked first from the orders still to dispatch (migration 0110's partial index, in order
    of age) and only those orders are joined: the page costs the same with ten or a million orders.
    """
    return conn.execute(
        f"""
        SELECT o.id AS order_id, o.number AS order_number,
               o.handoff_ticket, o.warehouse_id, c.name AS client_name, o.delivery_method,
               (SELECT max(e.delivered_at) FROM outbox_event e
                 WHERE e.aggregate_id = o.id AND e.event_type = 'order.handoff_requested' AND e.status = {ENTREGADO}
                   -- the months from the order's on only (ADR-019: pruned as each order is read)
                   AND e.settled_on >= (o.created_at AT TIME ZONE 'UTC')::date)
                 AS delivered_at,
               coalesce((SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity) ORDER BY l.sku)
                           FROM order_line l WHERE l.order_id = o.id), '[]') AS lines
          FROM (SELECT id FROM orders WHERE {TO_PREPARE} AND {_IN_DEPOSIT}
                 ORDER BY created_at, id LIMIT %(limit)s OFFSET %(offset)s) AS picked
          JOIN orders o ON o.id = picked.id
          JOIN client c ON c.id = o.client_id
         ORDER BY o.created_at, o.id
        """,
        {"deposit": deposit, "limit": limit, "offset": offset},
    ).fetchall()


def handoff_counts(conn: Conn, deposit: str | None) -> DictRow:
    """How many received handoffs wait to be prepared in the deposit (at most TO_PREPARE_COUNT_CAP + 1), and how
    many handoffs of every deposit are on the way or failed.

    Each count reads its own partial index (to prepare: migration 0110; pending: 0003; failed: 0080).
    The events on the way or failed are counted over every deposit: they name no deposit until joined to
    their order, and a count of them per deposit would read each one's order.
    """
    counts = conn.execute(
        f"""
        SELECT (SELECT count(*) FROM (SELECT 1 FROM orders WHERE {TO_PREPARE} AND {_IN_DEPOSIT}
                                       ORDER BY created_at, id LIMIT %(cap)s) AS waiting) AS to_prepare,
               (SELECT count(*) FROM {LIVE_EVENTS}
                 WHERE destination = 'warehouse' AND status = {PENDIENTE}) AS on_the_way,
               (SELECT count(*) FROM {LIVE_EVENTS}
                 WHERE destination = 'warehouse' AND status = {FALLIDO}) AS failed
        """,
        {"deposit": deposit, "cap": TO_PREPARE_COUNT_CAP + 1},
    )
    return one_row(counts)
