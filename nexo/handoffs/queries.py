"""Read-only SQL for the warehouse page. Callers pass a connection; nothing here writes."""

from __future__ import annotations

from psycopg.rows import DictRow

from nexo.db import Conn, one_row

PAGE_SIZE = 50
DELIVERED_COUNT_CAP = 1_000  # handoffs counted one by one at most (as the dead-letter list); beyond, "more than"


def delivered_handoffs(conn: Conn, *, limit: int = PAGE_SIZE, offset: int = 0) -> list[DictRow]:
    """Orders the warehouse system accepted (a ticket exists), newest delivery first, with their lines.

    The page of delivered events is picked first, from the delivered-events index (migration 0040),
    and only those orders are joined: the page costs the same with ten or a million handoffs.
    The destination filter is the event type's (a CHECK ties them); it is what the index leads with.
    """
    return conn.execute(
        """
        SELECT o.id AS order_id, o.handoff_ticket, o.warehouse_id, c.name AS client_name, e.delivered_at,
               coalesce((SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity) ORDER BY l.sku)
                           FROM order_line l WHERE l.order_id = o.id), '[]') AS lines
          FROM (SELECT aggregate_id, delivered_at FROM outbox_event
                 WHERE destination = 'warehouse' AND event_type = 'order.handoff_requested' AND status = 'ENTREGADO'
                 ORDER BY delivered_at DESC, aggregate_id
                 LIMIT %s OFFSET %s) AS e
          JOIN orders o ON o.id = e.aggregate_id
          JOIN client c ON c.id = o.client_id
         ORDER BY e.delivered_at DESC, o.id
        """,
        [limit, offset],
    ).fetchall()


def handoff_counts(conn: Conn) -> DictRow:
    """How many handoffs arrived (at most DELIVERED_COUNT_CAP + 1), and how many are on the way or failed.

    Each count reads its own partial index (delivered: migration 0040; pending: 0003; failed: 0080).
    Counting every handoff ever delivered would read the whole history on each page view,
    so that count stops one past the cap, like the dead-letter list's.
    """
    counts = conn.execute(
        """
        SELECT (SELECT count(*) FROM (SELECT 1 FROM outbox_event
                                       WHERE destination = 'warehouse' AND status = 'ENTREGADO'
                                       ORDER BY delivered_at DESC LIMIT %s) AS recent) AS delivered,
               (SELECT count(*) FROM outbox_event
                 WHERE destination = 'warehouse' AND status = 'PENDIENTE') AS on_the_way,
               (SELECT count(*) FROM outbox_event
                 WHERE destination = 'warehouse' AND status = 'FALLIDO') AS failed
        """,
        [DELIVERED_COUNT_CAP + 1],
    )
    return one_row(counts)
