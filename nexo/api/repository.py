"""SQL of API keys and of the API's order read models. Each function takes the caller's connection."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from uuid import UUID

from psycopg.rows import DictRow

from nexo.db import Conn, one_row
from nexo.orders import finder


def insert_key(
    conn: Conn, *, name: str, user_id: int, key_sha256: str, scopes: list[str] | None = None, expires_at: datetime | None = None
) -> int:
    """Store a new key's hash, its scopes (None: all of its user's permissions) and expiry; return its id."""
    return one_row(
        conn.execute(
            "INSERT INTO api_key (name, user_id, key_sha256, scopes, expires_at) VALUES (%s, %s, %s, %s, %s) RETURNING id",
            [name, user_id, key_sha256, scopes, expires_at],
        )
    )["id"]


def live_key_named(conn: Conn, name: str) -> DictRow | None:
    """The unrevoked key with this name, locked for the caller's transaction, or None."""
    return conn.execute(
        "SELECT id, name, user_id, scopes, expires_at FROM api_key WHERE name = %s AND revoked_at IS NULL FOR UPDATE", [name]
    ).fetchone()


def revoke_key(conn: Conn, key_id: int) -> None:
    """Mark a key revoked now; the next request that presents it gets 401."""
    conn.execute("UPDATE api_key SET revoked_at = now() WHERE id = %s", [key_id])


def key_with_user(conn: Conn, key_sha256: str) -> DictRow | None:
    """The live key with this hash, its user and the user's permissions, or None (one round trip)."""
    return conn.execute(
        """
        SELECT k.id AS key_id, k.name AS key_name, k.last_used_at, k.scopes, now() AS now,
               u.id, u.username, u.full_name,
               coalesce(array_agg(DISTINCT rp.permission_name)
                        FILTER (WHERE rp.permission_name IS NOT NULL), '{}') AS permissions
          FROM api_key k
          JOIN app_user u ON u.id = k.user_id AND u.active
          LEFT JOIN user_role ur ON ur.user_id = u.id
          LEFT JOIN role_permission rp ON rp.role_name = ur.role_name
         WHERE k.key_sha256 = %s AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
         GROUP BY k.id, u.id
        """,
        [key_sha256],
    ).fetchone()


def first_use(conn: Conn, key_id: int) -> bool:
    """Record the key's first use ever; False when it had been used before (then touch_key it)."""
    # The row lock makes two first requests at once agree: the second re-checks the condition and finds it used.
    return conn.execute("UPDATE api_key SET last_used_at = now() WHERE id = %s AND last_used_at IS NULL", [key_id]).rowcount == 1


def touch_key(conn: Conn, key_id: int) -> None:
    """Record that the key was used now."""
    conn.execute("UPDATE api_key SET last_used_at = now() WHERE id = %s", [key_id])


def all_keys(conn: Conn) -> list[DictRow]:
    """Every key (never its hash) with its user, live ones first, newest first."""
    return conn.execute(
        """
        SELECT k.id, k.name, u.username, u.full_name, k.created_at, k.last_used_at, k.revoked_at, k.scopes, k.expires_at
          FROM api_key k JOIN app_user u ON u.id = k.user_id
         ORDER BY k.revoked_at IS NOT NULL, k.created_at DESC, k.id DESC
        """
    ).fetchall()


def user_id_by_username(conn: Conn, username: str) -> int | None:
    """The id of the active user with this username, or None."""
    row = conn.execute("SELECT id FROM app_user WHERE username = %s AND active", [username.strip().lower()]).fetchone()
    return row["id"] if row else None


def user_permissions(conn: Conn, user_id: int) -> set[str]:
    """Every permission the user's roles grant."""
    rows = conn.execute(
        "SELECT DISTINCT rp.permission_name FROM user_role ur JOIN role_permission rp ON rp.role_name = ur.role_name"
        " WHERE ur.user_id = %s",
        [user_id],
    ).fetchall()
    return {r["permission_name"] for r in rows}


# An order page's position: (created_at, id) of its last order.
Keyset = tuple[datetime, UUID]

# --- order read models ---------------------------------------------------------------------------

# Each order with its lines (and what of each was dispatched) and events in the one row: a single
# statement for an order or a page, whatever its size (the 201 of POST /api/v1/orders reads it back).
_ORDER_COLUMNS = """o.id, o.number, o.status, o.billing_status, o.client_id, o.warehouse_id AS deposit_id, o.delivery_method,
                    o.total_cents, o.created_at, o.salesperson_id,
                    coalesce((SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity,
                                                                'unit_price_cents', l.unit_price_cents,
                                                                'dispatched', coalesce(d.dispatched, 0))
                                              ORDER BY l.sku)
                                FROM order_line l
                                LEFT JOIN (SELECT sl.product_id, sum(sl.quantity) AS dispatched
                                             FROM shipment s JOIN shipment_line sl ON sl.shipment_id = s.id
                                            WHERE s.order_id = o.id GROUP BY sl.product_id) d ON d.product_id = l.product_id
                               WHERE l.order_id = o.id), '[]') AS lines,
                    coalesce((SELECT json_agg(json_build_object('type', e.event_type, 'status', e.status)
                                              ORDER BY e.created_at, e.event_type)
                                FROM outbox_event e
                               -- the months from the order's on only (ADR-019: pruned as each order is read)
                               WHERE e.aggregate_id = o.id AND e.settled_on >= (o.created_at AT TIME ZONE 'UTC')::date),
                             '[]') AS events"""


def order(conn: Conn, order_id: UUID) -> DictRow | None:
    """One order with its lines and events, or None."""
    return conn.execute(f"SELECT {_ORDER_COLUMNS} FROM orders o WHERE o.id = %s", [order_id]).fetchone()


def orders_page(
    conn: Conn, salesperson_id: int, *, filters: finder.OrderFilters, after: Keyset | None, limit: int
) -> list[DictRow]:
    """Up to `limit` orders of a salesperson with their lines and events, newest first, strictly after the
    keyset `after` = (created_at, id) of the previous page: an index range scan, never an OFFSET that
    re-reads the skipped rows."""
    # The back office's filters (nexo/orders/finder.py, ADR-020), the salesperson forced: conditions are
    # added, not switched off with "%s IS NULL OR …", so every plan can use its index.
    where, params = finder.where_sql(replace(filters, salesperson_id=salesperson_id))
    if after is not None:
        where += " AND (o.created_at, o.id) < (%(after_at)s, %(after_id)s)"
        params |= {"after_at": after[0], "after_id": after[1]}
    return conn.execute(
        f"SELECT {_ORDER_COLUMNS} FROM orders o WHERE {where} ORDER BY o.created_at DESC, o.id DESC LIMIT %(limit)s",
        params | {"limit": limit},
    ).fetchall()


# --- payment read model ---------------------------------------------------------------------------


def payment(conn: Conn, payment_id: UUID) -> DictRow | None:
    """One payment with its client's exposure now (the answer of POST /api/v1/clients/<id>/payments)."""
    return conn.execute(
        "SELECT p.id, p.client_id, p.amount_cents, p.reference, p.created_at, c.exposure_cents"
        " FROM payment p JOIN client c ON c.id = p.client_id WHERE p.id = %s",
        [payment_id],
    ).fetchone()
