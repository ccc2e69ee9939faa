"""SQL of stock reservations (ADR-002). Every function takes the caller's connection and never commits.

Every writer takes stock rows in the lock order of nexo/stock/lock_order.py (SKU bytes, never the
database's collation), so order entry and the credit decisions never wait on each other in a cycle.
A reservation row holds `quantity` units of stock_level.reserved while `released_at` is NULL.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg import Connection

from nexo.states import ReservationKind
from nexo.stock.lock_order import SQL_COLLATE

Row = dict[str, Any]


def reserve_lines(
    conn: Connection, *, order_id: UUID, warehouse_id: str, kind: ReservationKind, lines: list[tuple[UUID, int]]
) -> set[UUID]:
    """ADR-002 for every line in one statement; returns the product ids reserved (a missing one: insufficient).

    lines are (product_id, quantity) in the stock lock order (nexo/stock/lock_order.py). The `locked`
    CTE takes the stock rows FOR UPDATE in that order (the lock step runs above the sort), so two orders
    still never deadlock; the UPDATE is the conditional one, `on_hand - reserved >= quantity`,
    re-checked on the row's latest version, and the CHECK disponible_no_negativo still refuses any
    writer that skips it. Each reserved row gets its reservation; expires_at stays NULL because RN-07
    (soft-reservation deadline) is BLOCKED.
    """
    products, quantities = (list(column) for column in zip(*lines, strict=True))
    rows = conn.execute(
        """
        WITH wanted AS (
                 SELECT * FROM unnest(%(products)s::uuid[], %(quantities)s::integer[]) WITH ORDINALITY
                                   AS w(product_id, quantity, position)),
             locked AS MATERIALIZED (
                 SELECT s.product_id, w.quantity
                   FROM stock_level s JOIN wanted w ON w.product_id = s.product_id
                  WHERE s.warehouse_id = %(warehouse)s
                  ORDER BY w.position
                    FOR UPDATE OF s),
             reserved AS (
                 UPDATE stock_level s SET reserved = s.reserved + l.quantity
                   FROM locked l
                  WHERE s.product_id = l.product_id AND s.warehouse_id = %(warehouse)s
                    AND s.on_hand - s.reserved >= l.quantity
                 RETURNING s.product_id, l.quantity),
             recorded AS (
                 INSERT INTO stock_reservation (order_id, product_id, warehouse_id, quantity, kind, expires_at)
                 SELECT %(order)s, product_id, %(warehouse)s, quantity, %(kind)s, NULL FROM reserved)
        SELECT product_id FROM reserved
        """,
        {"products": products, "quantities": quantities, "warehouse": warehouse_id, "order": order_id, "kind": kind},
    ).fetchall()
    return {row["product_id"] for row in rows}


_LOCK_RESERVATIONS_SQL = f"""
    SELECT r.product_id, r.warehouse_id, p.sku, r.quantity, r.kind, r.released_at
      FROM stock_reservation r
      JOIN product p ON p.id = r.product_id
     WHERE r.order_id = %s
     ORDER BY p.sku {SQL_COLLATE}
       FOR UPDATE OF r
"""


def lock_reservations(conn: Connection, order_id: UUID) -> list[Row]:
    """The order's reservations in the SKU lock order (ADR-002), locked until the end of the transaction."""
    return conn.execute(_LOCK_RESERVATIONS_SQL, [order_id]).fetchall()


def make_firm(conn: Connection, order_id: UUID) -> int:
    """Turn the order's held soft reservations into firm ones (CU-02 approval); return how many changed."""
    return conn.execute(
        "UPDATE stock_reservation SET kind = %s WHERE order_id = %s AND kind = %s AND released_at IS NULL",
        [ReservationKind.FIRME, order_id, ReservationKind.BLANDA],
    ).rowcount


def give_back(conn: Connection, product_id: UUID, warehouse_id: str, quantity: int) -> None:
    """Return reserved units to the available stock of one product in one warehouse."""
    conn.execute(
        "UPDATE stock_level SET reserved = reserved - %s WHERE product_id = %s AND warehouse_id = %s",
        [quantity, product_id, warehouse_id],
    )


def mark_soft_released(conn: Connection, order_id: UUID) -> int:
    """Stamp the order's held soft reservations as released (CU-02 rejection); return how many."""
    return conn.execute(
        "UPDATE stock_reservation SET released_at = now() WHERE order_id = %s AND kind = %s AND released_at IS NULL",
        [order_id, ReservationKind.BLANDA],
    ).rowcount
