"""SQL of stock reservations (ADR-002). Every function takes the caller's connection and never commits.

Every writer takes stock rows in the lock order of nexo/stock/lock_order.py (SKU bytes, never the
database's collation), so order entry and the credit decisions never wait on each other in a cycle.
A reservation row holds `quantity - dispatched` units of stock_level.reserved while `released_at` is NULL
(a dispatch counts what left in `dispatched`; the row is released once all of it left).
"""

from __future__ import annotations

from uuid import UUID

from psycopg.rows import DictRow

from nexo.db import Conn, array_literal, one_row
from nexo.states import ReservationKind
from nexo.stock.lock_order import SQL_COLLATE


def reserve_lines(
    conn: Conn, *, order_id: UUID, warehouse_id: str, kind: ReservationKind, lines: list[tuple[UUID, int]]
) -> set[UUID]:
    """ADR-002 for every line in one statement; returns the product ids reserved (a missing one: insufficient).

    lines are (product_id, quantity) in the stock lock order (nexo/stock/lock_order.py). The `locked`
    CTE takes the stock rows FOR UPDATE in that order (the lock step runs above the sort), so two orders
    still never deadlock; the UPDATE is the conditional one, `on_hand - reserved >= quantity`,
    re-checked on the row's latest version, and the CHECK disponible_no_negativo still refuses any
    writer that skips it. Each reserved row gets its reservation; expires_at stays NULL because RN-07
    (soft-reservation deadline) is BLOCKED.
    """
    products, quantities = (array_literal(column) for column in zip(*lines, strict=True))
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


def lock_reservations(conn: Conn, order_id: UUID) -> list[DictRow]:
    """The order's reservations in the SKU lock order (ADR-002), locked until the end of the transaction."""
    return conn.execute(_LOCK_RESERVATIONS_SQL, [order_id]).fetchall()


def make_firm(conn: Conn, order_id: UUID) -> int:
    """Turn the order's held soft reservations into firm ones (CU-02 approval); return how many changed."""
    return conn.execute(
        "UPDATE stock_reservation SET kind = %s WHERE order_id = %s AND kind = %s AND released_at IS NULL",
        [ReservationKind.FIRME, order_id, ReservationKind.BLANDA],
    ).rowcount


def release_all(conn: Conn, order_id: UUID) -> list[DictRow]:
    """Give back every unit the order still holds, soft or firm (a cancel, guarantee 19); return what was released."""
    return _release(conn, order_id, list(ReservationKind))


def release_soft(conn: Conn, order_id: UUID) -> list[DictRow]:
    """Give back what the order's soft reservations hold (CU-02 rejection); return what was released."""
    return _release(conn, order_id, [ReservationKind.BLANDA])


def _release(conn: Conn, order_id: UUID, kinds: list[ReservationKind]) -> list[DictRow]:
    """One statement: the order's live reservations of these kinds and their stock rows are locked in the SKU
    lock order (ADR-002), `reserved` goes down by exactly what each reservation holds (`quantity -
    dispatched`), and each reservation is stamped released; (sku, quantity) of each, in that order."""
    return conn.execute(
        f"""
        WITH held AS MATERIALIZED (
                 SELECT r.product_id, r.warehouse_id, p.sku, r.quantity - r.dispatched AS held
                   FROM stock_reservation r JOIN product p ON p.id = r.product_id
                  WHERE r.order_id = %(order)s AND r.released_at IS NULL AND r.kind = ANY(%(kinds)s)
                  ORDER BY p.sku {SQL_COLLATE}
                    FOR UPDATE OF r),
             locked AS MATERIALIZED (
                 SELECT s.product_id, s.warehouse_id
                   FROM stock_level s JOIN held h USING (product_id, warehouse_id)
                  ORDER BY h.sku {SQL_COLLATE}
                    FOR UPDATE OF s),
             given_back AS (
                 UPDATE stock_level s SET reserved = s.reserved - h.held
                   FROM held h JOIN locked l USING (product_id, warehouse_id)
                  WHERE s.product_id = h.product_id AND s.warehouse_id = h.warehouse_id),
             released AS (
                 UPDATE stock_reservation r SET released_at = now()
                   FROM held h
                  WHERE r.order_id = %(order)s AND r.product_id = h.product_id AND r.warehouse_id = h.warehouse_id)
        SELECT sku, held AS quantity FROM held ORDER BY sku {SQL_COLLATE}
        """,
        {"order": order_id, "kinds": kinds},
    ).fetchall()


def remaining(conn: Conn, order_id: UUID) -> list[DictRow]:
    """The order's firm reservations with what is left to dispatch of each, locked in the SKU lock order."""
    return conn.execute(
        f"""
        SELECT r.product_id, r.warehouse_id, p.sku, r.quantity, r.dispatched, r.quantity - r.dispatched AS remaining,
               r.kind, r.released_at
          FROM stock_reservation r JOIN product p ON p.id = r.product_id
         WHERE r.order_id = %s
         ORDER BY p.sku {SQL_COLLATE}
           FOR UPDATE OF r
        """,
        [order_id],
    ).fetchall()


def consume(conn: Conn, order_id: UUID, lines: list[tuple[UUID, str, int]]) -> int:
    """What left the warehouse (a dispatch, guarantee 19): for each (product_id, warehouse_id, quantity), in
    the SKU lock order, `on_hand` and `reserved` go down together and the reservation counts it dispatched
    (released once all of it left). Return the stock rows changed.

    The caller has locked the reservations (remaining()) and checked each quantity against what remains;
    the CHECKs on both tables refuse anything else (dispatched <= quantity, disponible_no_negativo).
    """
    products, warehouses, quantities = (list(column) for column in zip(*lines, strict=True))
    consumed = conn.execute(
        f"""
        WITH shipped AS MATERIALIZED (
                 SELECT w.product_id, w.warehouse_id, w.quantity
                   FROM unnest(%(products)s::uuid[], %(warehouses)s::text[], %(quantities)s::integer[])
                        WITH ORDINALITY AS w(product_id, warehouse_id, quantity, position)),
             locked AS MATERIALIZED (
                 SELECT s.product_id, s.warehouse_id
                   FROM stock_level s JOIN shipped w USING (product_id, warehouse_id)
                   JOIN product p ON p.id = s.product_id
                  ORDER BY p.sku {SQL_COLLATE}
                    FOR UPDATE OF s),
             consumed AS (
                 UPDATE stock_level s SET on_hand = s.on_hand - w.quantity, reserved = s.reserved - w.quantity
                   FROM shipped w JOIN locked l USING (product_id, warehouse_id)
                  WHERE s.product_id = w.product_id AND s.warehouse_id = w.warehouse_id
                 RETURNING s.product_id),
             counted AS (
                 UPDATE stock_reservation r
                    SET dispatched = r.dispatched + w.quantity,
                        released_at = CASE WHEN r.dispatched + w.quantity = r.quantity THEN now() END
                   FROM shipped w
                  WHERE r.order_id = %(order)s AND r.product_id = w.product_id AND r.warehouse_id = w.warehouse_id)
        SELECT count(*) AS changed FROM consumed
        """,
        {"order": order_id, "products": products, "warehouses": warehouses, "quantities": quantities},
    )
    return one_row(consumed)["changed"]
