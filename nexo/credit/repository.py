"""SQL of the CU-02 decision. Every function takes the caller's connection and never commits.

Lock order inside a decision: the order row, then the client row, then stock rows in the SKU lock
order of nexo/stock/lock_order.py (bytes, not the database collation). Order entry locks idempotency key ->
client -> stock in that same order and never waits on an existing order row, so the two use cases
cannot wait on each other in a cycle.
"""

from __future__ import annotations

from uuid import UUID

from psycopg.rows import DictRow

from nexo.db import Conn, one_row
from nexo.states import BillingStatus, OrderStatus


def mark_decided(
    conn: Conn, order_id: UUID, *, status: OrderStatus, billing_status: BillingStatus, officer_id: int, note: str | None
) -> DictRow | None:
    """Move a pending order to its decision and return it; None when it is not pending (or unknown).

    The status condition is the whole concurrency guard (CU-02): a second decider blocks on the row
    lock, Postgres re-evaluates the WHERE once the first commits, and the second updates nothing.
    """
    return conn.execute(
        """
        UPDATE orders
           SET status = %s, billing_status = %s, decided_at = now(), decided_by = %s, decision_note = %s,
               -- what the order adds to the client's exposure once confirmed (a cancel gives it back)
               charged_cents = CASE WHEN %s THEN total_cents ELSE 0 END
         WHERE id = %s AND status = %s
     RETURNING id, client_id, warehouse_id, total_cents, decided_at, salesperson_id
        """,
        [
            status,
            billing_status,
            officer_id,
            note,
            status == OrderStatus.CONFIRMADO,
            order_id,
            OrderStatus.PENDIENTE_AUTORIZACION,
        ],  # fmt: skip
    ).fetchone()


def find_decision(conn: Conn, order_id: UUID) -> DictRow | None:
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


def lock_client(conn: Conn, client_id: UUID) -> DictRow:
    """The client's credit figures, locked until the end of the transaction (approval changes them)."""
    return one_row(conn.execute(_CLIENT_SQL + " FOR UPDATE", [client_id]))


def read_client(conn: Conn, client_id: UUID) -> DictRow:
    """The client's credit figures without locking (a rejection only records them)."""
    return one_row(conn.execute(_CLIENT_SQL, [client_id]))


def add_exposure(conn: Conn, client_id: UUID, cents: int) -> int:
    """Add an authorized order's total to the client's exposure (RN-01); return the new exposure."""
    return one_row(
        conn.execute(
            "UPDATE client SET exposure_cents = exposure_cents + %s WHERE id = %s RETURNING exposure_cents", [cents, client_id]
        )
    )["exposure_cents"]
