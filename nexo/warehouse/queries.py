"""Read-only SQL for the warehouse page. Callers pass a connection; nothing here writes."""

from __future__ import annotations

PAGE_SIZE = 50


def delivered_handoffs(conn, *, limit: int = PAGE_SIZE, offset: int = 0) -> list[dict]:
    """Orders the warehouse system accepted (a ticket exists), newest delivery first, with their lines."""
    return conn.execute(
        """
        SELECT o.id AS order_id, o.handoff_ticket, o.warehouse_id, c.name AS client_name, e.delivered_at,
               coalesce(json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity) ORDER BY l.sku)
                        FILTER (WHERE l.sku IS NOT NULL), '[]') AS lines
          FROM outbox_event e
          JOIN orders o ON o.id = e.aggregate_id
          JOIN client c ON c.id = o.client_id
          LEFT JOIN order_line l ON l.order_id = o.id
         WHERE e.event_type = 'order.handoff_requested' AND e.status = 'ENTREGADO'
         GROUP BY o.id, c.name, e.delivered_at
         ORDER BY e.delivered_at DESC, o.id
         LIMIT %s OFFSET %s
        """, [limit, offset]).fetchall()


def handoff_counts(conn) -> dict:
    """How many handoffs arrived, and how many confirmed orders have not reached the warehouse yet."""
    return conn.execute(
        "SELECT count(*) FILTER (WHERE status = 'ENTREGADO') AS delivered,"
        "       count(*) FILTER (WHERE status = 'PENDIENTE') AS on_the_way,"
        "       count(*) FILTER (WHERE status = 'FALLIDO') AS failed"
        "  FROM outbox_event WHERE event_type = 'order.handoff_requested'").fetchone()
