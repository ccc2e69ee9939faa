"""SQL of the order transaction (CU-01). Every function takes the caller's connection and never commits."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    """The idempotency row as the claim statement left it."""

    inserted: bool                   # True: this transaction created the key; False: it existed (committed)
    request_hash: str
    fingerprint_version: int
    order_id: object | None


def claim_request(conn, request_id, request_hash: str, fingerprint_version: int) -> Claim:
    """Claim a requestId (ADR-005, ADR-007): insert it, or wait for and lock the committed row that has it.

    In READ COMMITTED, a concurrent transaction that inserted the same key makes this statement wait
    until it ends; if it committed we take the DO UPDATE path and see its row, if it rolled back our
    insert goes through. The no-op SET exists only to lock the row and return it; `xmax = 0` is true only
    for a freshly inserted tuple (ADR-007 explains why we accept this undocumented detail). Only valid in
    READ COMMITTED: under REPEATABLE READ a request that waited gets a serialization failure instead.
    """
    row = conn.execute(
        """
        INSERT INTO idempotency_keys (request_id, request_hash, fingerprint_version)
        VALUES (%s, %s, %s)
        ON CONFLICT (request_id) DO UPDATE SET request_id = EXCLUDED.request_id
        RETURNING (xmax = 0) AS inserted, request_hash, fingerprint_version, order_id
        """,
        [request_id, request_hash, fingerprint_version]).fetchone()
    return Claim(row["inserted"], row["request_hash"], row["fingerprint_version"], row["order_id"])


def link_request_to_order(conn, request_id, order_id) -> None:
    """Point the claimed key at the order created in the same transaction."""
    conn.execute("UPDATE idempotency_keys SET order_id = %s WHERE request_id = %s", [order_id, request_id])


def find_client(conn, client_id) -> dict | None:
    """The client's id, name and tier, or None when it does not exist."""
    return conn.execute("SELECT id, name, tier FROM client WHERE id = %s", [client_id]).fetchone()


def warehouse_exists(conn, warehouse_id: str) -> bool:
    """True when the warehouse code exists."""
    return conn.execute("SELECT 1 FROM warehouse WHERE id = %s", [warehouse_id]).fetchone() is not None


def products_with_prices(conn, skus: list[str]) -> dict[str, dict]:
    """Catalog rows by SKU with the server's list price (price_cents None when there is none, RN-03)."""
    rows = conn.execute(
        """
        SELECT p.id AS product_id, p.sku, pl.price_cents
          FROM product p LEFT JOIN price_list pl ON pl.product_id = p.id
         WHERE p.sku = ANY(%s)
        """, [skus]).fetchall()
    return {row["sku"]: row for row in rows}


def charge_credit(conn, client_id, amount_cents: int) -> bool:
    """RN-01 as one conditional UPDATE: add the order to the exposure only if it stays within the limit.

    The decision and the write are one statement on the client's row, so two orders of one client
    serialise on that row and can never approve past the limit together (like ADR-002 for stock).
    """
    cursor = conn.execute(
        """
        UPDATE client SET exposure_cents = exposure_cents + %(amount)s
         WHERE id = %(client)s AND exposure_cents + %(amount)s <= credit_limit_cents
        """, {"amount": amount_cents, "client": client_id})
    return cursor.rowcount == 1


def insert_order(conn, *, order_id, client_id, warehouse_id: str, salesperson_id: int, status: str,
                 total_cents: int, billing_status: str, delivery_method: str | None) -> None:
    """Insert the order header."""
    conn.execute(
        """
        INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents, billing_status,
                            delivery_method)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
        """,
        [order_id, client_id, warehouse_id, salesperson_id, status, total_cents, billing_status, delivery_method])


def insert_line(conn, *, order_id, product_id, sku: str, quantity: int, unit_price_cents: int) -> None:
    """Insert one order line with the unit price copied from the price list (RN-03)."""
    conn.execute(
        "INSERT INTO order_line (order_id, product_id, sku, quantity, unit_price_cents) VALUES (%s, %s, %s, %s, %s)",
        [order_id, product_id, sku, quantity, unit_price_cents])


def reserve_line(conn, product_id, warehouse_id: str, quantity: int) -> bool:
    """ADR-002: reserve only if the units are available; False (0 rows) means insufficient stock."""
    cursor = conn.execute(
        """
        UPDATE stock_level SET reserved = reserved + %(qty)s
         WHERE product_id = %(product)s AND warehouse_id = %(warehouse)s AND on_hand - reserved >= %(qty)s
        """, {"qty": quantity, "product": product_id, "warehouse": warehouse_id})
    return cursor.rowcount == 1


def insert_reservation(conn, *, order_id, product_id, warehouse_id: str, quantity: int, kind: str) -> None:
    """Record a reservation; expires_at stays NULL because RN-07 (soft-reservation deadline) is BLOCKED."""
    conn.execute(
        """
        INSERT INTO stock_reservation (order_id, product_id, warehouse_id, quantity, kind, expires_at)
        VALUES (%s, %s, %s, %s, %s, NULL)
        """, [order_id, product_id, warehouse_id, quantity, kind])


def order_status(conn, order_id) -> str | None:
    """The order's current status (a replay shows the order as it is now, not as it was)."""
    row = conn.execute("SELECT status FROM orders WHERE id = %s", [order_id]).fetchone()
    return row["status"] if row else None
