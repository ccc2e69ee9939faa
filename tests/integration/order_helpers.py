"""Shared helpers of the order tests: demo ids, a command builder and read-backs of what was persisted."""

from __future__ import annotations

import uuid

from nexo.orders.commands import CreateOrder, OrderLineRequest


def client_id(db, name: str) -> uuid.UUID:
    """The id of a demo client by name."""
    with db.reading() as conn:
        return conn.execute("SELECT id FROM client WHERE name = %s", [name]).fetchone()["id"]


def user_id(db, username: str) -> int:
    """The id of a demo user."""
    with db.reading() as conn:
        return conn.execute("SELECT id FROM app_user WHERE username = %s", [username]).fetchone()["id"]


def command(
    db,
    lines,
    *,
    client: str = "Corralón del Sur",
    warehouse: str = "CEN",
    request_id=None,
    salesperson: str = "vendedor1",
    delivery_method: str | None = None,
) -> CreateOrder:
    """A CreateOrder for demo data; lines as [(sku, quantity), ...]."""
    return CreateOrder(
        request_id=request_id or uuid.uuid4(),
        client_id=client_id(db, client),
        warehouse_id=warehouse,
        lines=tuple(OrderLineRequest(sku, qty) for sku, qty in lines),
        salesperson_id=user_id(db, salesperson),
        delivery_method=delivery_method,
    )


def count(db, sql: str, params=None) -> int:
    """The single integer a COUNT(*)-like query returns."""
    with db.reading() as conn:
        return list(conn.execute(sql, params).fetchone().values())[0]


def stock(db, sku: str, warehouse: str = "CEN") -> dict:
    """on_hand and reserved of one SKU in one warehouse."""
    with db.reading() as conn:
        return conn.execute(
            "SELECT s.on_hand, s.reserved FROM stock_level s JOIN product p ON p.id = s.product_id"
            " WHERE p.sku = %s AND s.warehouse_id = %s",
            [sku, warehouse],
        ).fetchone()


def exposure(db, name: str) -> int:
    """A client's exposure in cents."""
    with db.reading() as conn:
        return conn.execute("SELECT exposure_cents FROM client WHERE name = %s", [name]).fetchone()["exposure_cents"]


# Writers only tests need: a half-made order inside a transaction the test keeps open.


def insert_order(
    conn,
    *,
    order_id,
    client_id,
    warehouse_id: str,
    salesperson_id: int,
    status: str,
    total_cents: int,
    billing_status: str,
    delivery_method: str | None,
) -> None:
    """Insert the order header."""
    conn.execute(
        """
        INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents, billing_status,
                            delivery_method)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
        """,
        [order_id, client_id, warehouse_id, salesperson_id, status, total_cents, billing_status, delivery_method],
    )


def link_request_to_order(conn, request_id, order_id) -> None:
    """Point the claimed key at the order created in the same transaction."""
    conn.execute("UPDATE idempotency_keys SET order_id = %s WHERE request_id = %s", [order_id, request_id])
