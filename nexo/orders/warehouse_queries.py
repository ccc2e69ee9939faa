"""Read models of the warehouse's dispatch section: the orders to dispatch with what remains, the recent dispatches.

The orders to dispatch are the confirmed ones the warehouse system received (their handoff has its
ticket): one whose handoff is still on the way, or was withdrawn with its cancel (ADR-017), is not on
the warehouse's list yet, as on the handoffs list beside it.

Each list picks its page from an index first (migration 0110) and joins only those rows, so the
warehouse page costs the same with ten or a million orders (test_query_plans.py).
"""

from __future__ import annotations

from psycopg.rows import DictRow

from nexo.db import Conn
from nexo.states import DISPATCHABLE, sql_constant

Row = DictRow
PAGE_SIZE = 50
COUNT_CAP = 1_000  # counted one by one at most; beyond, "more than"
# nexo.states.DISPATCHABLE spelled as migration 0110's partial index spells it: constants, so the planner
# can match the index (nexo.states.sql_constant; tests/unit/test_money_and_words.py checks the spelling).
WAITING = f"status IN ({sql_constant(*DISPATCHABLE)})"
# The ticket is a filter, not part of the index: the relay's UPDATE that writes it stays a HOT update.
RECEIVED = "handoff_ticket IS NOT NULL"
IN_WAREHOUSE = "(%(warehouse)s::text IS NULL OR warehouse_id = %(warehouse)s)"  # one warehouse, or all of them (NULL)

# An order with each line's ordered, dispatched and remaining units. What remains is what its live
# reservation still holds (a reservation is released once all of it left, or when the order is cancelled).
_ORDER_TO_DISPATCH = """
    SELECT o.id, o.number, o.status, o.created_at, o.warehouse_id, o.handoff_ticket, o.delivery_method, c.name AS client_name,
           w.name AS warehouse_name,
           coalesce((SELECT json_agg(json_build_object(
                                'sku', l.sku, 'name', p.name, 'quantity', l.quantity,
                                'dispatched', coalesce(r.dispatched, 0),
                                'remaining', coalesce(CASE WHEN r.released_at IS NULL THEN r.quantity - r.dispatched END, 0))
                            ORDER BY l.sku)
                       FROM order_line l
                       JOIN product p ON p.id = l.product_id
                       LEFT JOIN stock_reservation r
                              ON r.order_id = l.order_id AND r.product_id = l.product_id AND r.warehouse_id = o.warehouse_id
                      WHERE l.order_id = o.id), '[]') AS lines
      FROM picked
      JOIN orders o ON o.id = picked.id
      JOIN client c ON c.id = o.client_id
      JOIN warehouse w ON w.id = o.warehouse_id
     ORDER BY o.created_at, o.id
"""


def orders_to_dispatch(conn: Conn, warehouse_id: str | None = None, *, limit: int = PAGE_SIZE) -> list[Row]:
    """Confirmed orders the warehouse received and has not fully dispatched, of one warehouse (None: all), oldest
    first, with what remains of each line: what the warehouse picks, in that order (the picking list too)."""
    return conn.execute(
        f"WITH picked AS (SELECT id FROM orders WHERE {WAITING} AND {RECEIVED} AND {IN_WAREHOUSE}"
        " ORDER BY created_at, id LIMIT %(limit)s)" + _ORDER_TO_DISPATCH,
        {"warehouse": warehouse_id, "limit": limit},
    ).fetchall()


def order_to_dispatch(conn: Conn, order_id) -> Row | None:
    """One order as the dispatch section shows it, whatever its state (a refused dispatch shows its form again)."""
    return conn.execute("WITH picked AS (SELECT %s::uuid AS id)" + _ORDER_TO_DISPATCH, [order_id]).fetchone()


def count_to_dispatch(conn: Conn, warehouse_id: str | None = None) -> int:
    """How many orders wait to be dispatched from one warehouse (None: all), at most COUNT_CAP + 1."""
    row = conn.execute(
        f"SELECT count(*) AS n FROM (SELECT 1 FROM orders WHERE {WAITING} AND {RECEIVED} AND {IN_WAREHOUSE}"
        " ORDER BY created_at, id LIMIT %(cap)s) AS w",
        {"warehouse": warehouse_id, "cap": COUNT_CAP + 1},
    ).fetchone()
    return row["n"] if row else 0


def recent_shipments(conn: Conn, warehouse_id: str | None = None, *, limit: int = 20) -> list[Row]:
    """The latest dispatches from one warehouse (None: all), newest first: when, who (or which API key), what left,
    and the order's state now."""
    return conn.execute(
        """
        SELECT s.id, s.order_id, o.number AS order_number, s.created_at, u.full_name AS created_by_name, k.name AS api_key_name,
               o.status, o.warehouse_id, c.name AS client_name,
               coalesce((SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity) ORDER BY l.sku)
                           FROM shipment_line l WHERE l.shipment_id = s.id), '[]') AS lines
          FROM (SELECT s.id FROM shipment s
                 -- A scalar subquery, looked up per shipment walked (newest first, up to the page): as EXISTS
                 -- the planner joined every order of the warehouse instead (test_query_plans.py).
                 WHERE %(warehouse)s::text IS NULL
                    OR (SELECT w.warehouse_id FROM orders w WHERE w.id = s.order_id) = %(warehouse)s
                 ORDER BY s.created_at DESC, s.id DESC LIMIT %(limit)s) AS picked
          JOIN shipment s ON s.id = picked.id
          JOIN orders o ON o.id = s.order_id
          JOIN client c ON c.id = o.client_id
          JOIN app_user u ON u.id = s.created_by
          LEFT JOIN api_key k ON k.id = s.api_key_id
         ORDER BY s.created_at DESC, s.id DESC
        """,
        {"warehouse": warehouse_id, "limit": limit},
    ).fetchall()
