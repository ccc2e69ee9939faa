"""SQL of the CU-02 decision. Every function takes the caller's connection and never commits.

Lock order inside a decision: the order row, then the client row, then stock rows in the SKU lock
order of nexo/lock_order.py (bytes, not the database collation). Order entry locks idempotency key ->
client -> stock in that same order and never waits on an existing order row, so the two use cases
cannot wait on each other in a cycle.
"""

from __future__ import annotations

from nexo.lock_order import SQL_COLLATE

PENDING = "PENDIENTE_AUTORIZACION"


def mark_decided(conn, order_id, *, status: str, billing_status: str, officer_id: int, note: str | None):
    """Move a pending order to its decision and return it; None when it is not pending (or unknown).

    The status condition is the whole concurrency guard (CU-02): a second decider blocks on the row
    lock, Postgres re-evaluates the WHERE once the first commits, and the second updates nothing.
    """
    return conn.execute(
        """
        UPDATE orders
           SET status = %s, billing_status = %s, decided_at = now(), decided_by = %s, decision_note = %s
         WHERE id = %s AND status = %s
     RETURNING id, client_id, warehouse_id, total_cents, decided_at
        """,
        [status, billing_status, officer_id, note, order_id, PENDING],
    ).fetchone()


def find_decision(conn, order_id):
    """Status and decider of an order (None when it does not exist)."""
    return conn.execute(
        """
        SELECT o.status, o.decided_at, u.full_name AS decided_by_name
          FROM orders o
          LEFT JOIN app_user u ON u.id = o.decided_by
         WHERE o.id = %s
        """,
        [order_id],
    ).fetchone()


_CLIENT_SQL = "SELECT id, name, tier, credit_limit_cents, exposure_cents FROM client WHERE id = %s"


def lock_client(conn, client_id):
    """The client's credit figures, locked until the end of the transaction (approval changes them)."""
    return conn.execute(_CLIENT_SQL + " FOR UPDATE", [client_id]).fetchone()


def read_client(conn, client_id):
    """The client's credit figures without locking (a rejection only records them)."""
    return conn.execute(_CLIENT_SQL, [client_id]).fetchone()


def add_exposure(conn, client_id, cents: int) -> int:
    """Add an authorized order's total to the client's exposure (RN-01); return the new exposure."""
    return conn.execute(
        "UPDATE client SET exposure_cents = exposure_cents + %s WHERE id = %s RETURNING exposure_cents", [cents, client_id]
    ).fetchone()["exposure_cents"]


_LOCK_RESERVATIONS_SQL = (
    """
    SELECT r.product_id, r.warehouse_id, p.sku, r.quantity, r.kind, r.released_at
      FROM stock_reservation r
      JOIN product p ON p.id = r.product_id
     WHERE r.order_id = %s
     ORDER BY p.sku """
    + SQL_COLLATE
    + """
       FOR UPDATE OF r
"""
)


def lock_reservations(conn, order_id) -> list[dict]:
    """The order's reservations in the SKU lock order (ADR-002), locked until the end of the transaction."""
    return conn.execute(_LOCK_RESERVATIONS_SQL, [order_id]).fetchall()


def make_reservations_firm(conn, order_id) -> int:
    """Turn the order's held soft reservations into firm ones; return how many changed."""
    return conn.execute(
        "UPDATE stock_reservation SET kind = 'FIRME' WHERE order_id = %s AND kind = 'BLANDA' AND released_at IS NULL", [order_id]
    ).rowcount


def give_back_stock(conn, product_id, warehouse_id: str, quantity: int) -> None:
    """Return reserved units to the available stock of one product in one warehouse."""
    conn.execute(
        "UPDATE stock_level SET reserved = reserved - %s WHERE product_id = %s AND warehouse_id = %s",
        [quantity, product_id, warehouse_id],
    )


def mark_reservations_released(conn, order_id) -> int:
    """Stamp the order's held soft reservations as released; return how many."""
    return conn.execute(
        "UPDATE stock_reservation SET released_at = now() WHERE order_id = %s AND kind = 'BLANDA' AND released_at IS NULL",
        [order_id],
    ).rowcount
