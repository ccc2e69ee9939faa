"""Read-only SQL behind the credit pages: the queue, its filters, the badge and the decided tab."""

from __future__ import annotations

from uuid import UUID

from psycopg.rows import DictRow

from nexo.db import Conn, one_row
from nexo.states import OrderStatus, ReservationKind, sql_constant

QUEUE_LIMIT = 200
# The queue, its badge and its client filter read the waiting orders from migration 0002's partial index
# orders_pending_idx (WHERE status = 'PENDIENTE_AUTORIZACION'): a constant, as the index spells it
# (nexo.states.sql_constant says why).
WAITING = f"status = {sql_constant(OrderStatus.PENDIENTE_AUTORIZACION)}"

_PENDING_SQL = f"""
    SELECT o.id, o.number, o.created_at, o.total_cents, o.warehouse_id,
           c.id AS client_id, c.name AS client_name, c.tier, c.credit_limit_cents, c.exposure_cents,
           c.exposure_cents + o.total_cents - c.credit_limit_cents AS excess_cents,
           u.id AS salesperson_id, u.full_name AS salesperson_name,
           floor(extract(epoch FROM now() - o.created_at))::bigint AS waiting_s,
           -- RN-07 is BLOCKED: the age of the soft reservations is shown, never an expiry.
           floor(extract(epoch FROM now() - soft.oldest))::bigint AS soft_age_s,
           soft.released_lines,
           paid.paid_since_cents, paid.last_paid_at,
           count(*) OVER () AS matching
      FROM orders o
      JOIN client c ON c.id = o.client_id
      JOIN app_user u ON u.id = o.salesperson_id
      LEFT JOIN LATERAL (
           SELECT min(r.created_at) FILTER (WHERE r.kind = %(soft)s AND r.released_at IS NULL) AS oldest,
                  count(*) FILTER (WHERE r.released_at IS NOT NULL) AS released_lines
             FROM stock_reservation r WHERE r.order_id = o.id) soft ON true
      -- What the client paid since the order was entered (payment_client_idx): Laura is told when it brought
      -- the client back under its limit; she still decides (CU-02).
      LEFT JOIN LATERAL (
           SELECT sum(p.amount_cents) AS paid_since_cents, max(p.created_at) AS last_paid_at
             FROM payment p WHERE p.client_id = o.client_id AND p.created_at > o.created_at) paid ON true
     WHERE o.{WAITING}
       AND (%(order_id)s::uuid IS NULL OR o.id = %(order_id)s::uuid)
       AND (%(client_id)s::uuid IS NULL OR o.client_id = %(client_id)s::uuid)
       AND (%(tier)s::text IS NULL OR c.tier = %(tier)s::text)
       AND (%(salesperson_id)s::bigint IS NULL OR o.salesperson_id = %(salesperson_id)s::bigint)
     ORDER BY o.created_at, o.id
     LIMIT %(limit)s
"""

_LINES_SQL = """
    SELECT ol.order_id, ol.sku, p.name, ol.quantity, ol.unit_price_cents,
           ol.quantity * ol.unit_price_cents AS amount_cents,
           r.kind AS reservation_kind, r.released_at,
           s.on_hand - s.reserved AS available_now
      FROM order_line ol
      JOIN orders o ON o.id = ol.order_id
      JOIN product p ON p.id = ol.product_id
      LEFT JOIN stock_reservation r
             ON r.order_id = ol.order_id AND r.product_id = ol.product_id AND r.warehouse_id = o.warehouse_id
      LEFT JOIN stock_level s ON s.product_id = ol.product_id AND s.warehouse_id = o.warehouse_id
     WHERE ol.order_id = ANY(%s)
     ORDER BY ol.order_id, ol.sku
"""


def pending_orders(
    conn: Conn,
    *,
    order_id: UUID | None = None,
    client_id: UUID | None = None,
    tier: str | None = None,
    salesperson_id: int | None = None,
) -> list[DictRow]:
    """Orders waiting for credit, oldest first, each with its client's figures and its lines."""
    rows = conn.execute(
        _PENDING_SQL,
        {
            "order_id": order_id,
            "client_id": client_id,
            "tier": tier,
            "salesperson_id": salesperson_id,
            "limit": QUEUE_LIMIT,
            "soft": ReservationKind.BLANDA,
        },
    ).fetchall()
    lines: dict[UUID, list[DictRow]] = {}
    if rows:
        for line in conn.execute(_LINES_SQL, [[row["id"] for row in rows]]).fetchall():
            lines.setdefault(line["order_id"], []).append(line)
    return [{**row, "lines": lines.get(row["id"], [])} for row in rows]


def pending_count(conn: Conn) -> int:
    """How many orders wait for credit (the navigation badge)."""
    return one_row(conn.execute(f"SELECT count(*) AS n FROM orders WHERE {WAITING}"))["n"]


def filter_choices(conn: Conn, selected_client: UUID | None = None) -> dict[str, list[DictRow]]:
    """Clients and salespeople to filter the queue by: clients with a waiting order (and the selected one).

    Only the clients in the queue: a select of every client would be thousands of options rendered on
    each visit (with 10,000 clients, most of the page's size and CPU; ADR-011), and choosing a
    client without a waiting order only ever shows an empty queue.
    """
    clients = conn.execute(
        f"""
        SELECT id, name, tier FROM client
         WHERE id IN (SELECT client_id FROM orders WHERE {WAITING})
         UNION
        SELECT id, name, tier FROM client WHERE id = %s::uuid
         ORDER BY name
        """,
        [selected_client],
    ).fetchall()
    salespeople = conn.execute(
        """
        SELECT DISTINCT u.id, u.full_name
          FROM app_user u
          JOIN user_role ur ON ur.user_id = u.id
          JOIN role_permission rp ON rp.role_name = ur.role_name AND rp.permission_name = 'orders.create'
         ORDER BY u.full_name
        """
    ).fetchall()
    return {"clients": clients, "salespeople": salespeople}


def decided_orders(conn: Conn, *, limit: int, offset: int) -> tuple[list[DictRow], int]:
    """Credit decisions, newest first, with who, when, why and the figures at decision time; and the total."""
    total = one_row(conn.execute("SELECT count(*) AS n FROM orders WHERE decided_at IS NOT NULL"))["n"]
    rows = conn.execute(
        """
        SELECT o.id, o.number, o.status, o.decided_at, o.decision_note, o.total_cents, o.created_at,
               c.name AS client_name, c.tier, d.full_name AS decided_by_name, d.username AS decided_by_username,
               s.full_name AS salesperson_name, a.action, a.details
          FROM orders o
          JOIN client c ON c.id = o.client_id
          JOIN app_user s ON s.id = o.salesperson_id
          LEFT JOIN app_user d ON d.id = o.decided_by
          LEFT JOIN LATERAL (
               SELECT action, details FROM audit_log
                WHERE object_type = 'order' AND object_id = o.id::text
                  AND action IN ('credit.approved', 'credit.rejected')
                ORDER BY id DESC LIMIT 1) a ON true
         WHERE o.decided_at IS NOT NULL
         ORDER BY o.decided_at DESC, o.id
         LIMIT %s OFFSET %s
        """,
        [limit, offset],
    ).fetchall()
    return rows, total


def order_number(conn: Conn, order_id: UUID) -> int | None:
    """The number people name the order by (ADR-020), or None when there is no such order."""
    row = conn.execute("SELECT number FROM orders WHERE id = %s", [order_id]).fetchone()
    return None if row is None else row["number"]
