"""Read-only SQL behind a client's account page: its figures, open orders, payments and past decisions.

Each list reads a client's own rows through an index that leads with the client (orders_client_idx,
payment_client_idx, audit_log_object_idx) and stops at its page.
"""

from __future__ import annotations

from psycopg.rows import DictRow

from nexo.db import Conn
from nexo.states import OPEN_ORDER_STATUSES, OrderStatus

Row = DictRow
PAGE_SIZE = 50


def client(conn: Conn, client_id) -> Row | None:
    """The client's credit figures: limit, exposure (what it owes plus its confirmed orders), available credit."""
    return conn.execute(
        """
        SELECT id, name, tier, credit_limit_cents, exposure_cents,
               greatest(credit_limit_cents - exposure_cents, 0) AS available_cents
          FROM client WHERE id = %s
        """,
        [client_id],
    ).fetchone()


def open_orders(conn: Conn, client_id, *, limit: int = PAGE_SIZE) -> list[Row]:
    """The client's open orders (CONFIRMADO, PENDIENTE_AUTORIZACION, DESPACHADO_PARCIAL: CONTRACT.md), newest first."""
    return conn.execute(
        """
        SELECT o.id, o.number, o.status, o.created_at, o.total_cents, o.charged_cents,
               o.warehouse_id, u.full_name AS salesperson_name
          FROM orders o JOIN app_user u ON u.id = o.salesperson_id
         WHERE o.client_id = %s AND o.status = ANY(%s)
         ORDER BY o.created_at DESC, o.id
         LIMIT %s
        """,
        [client_id, list(OPEN_ORDER_STATUSES), limit],
    ).fetchall()


def payments(conn: Conn, client_id, *, limit: int = PAGE_SIZE) -> list[Row]:
    """The client's payments, newest first, with who recorded each (or which API key)."""
    return conn.execute(
        """
        SELECT p.id, p.amount_cents, p.reference, p.created_at, u.full_name AS created_by_name, k.name AS api_key_name
          FROM payment p
          JOIN app_user u ON u.id = p.created_by
          LEFT JOIN api_key k ON k.id = p.api_key_id
         WHERE p.client_id = %s
         ORDER BY p.created_at DESC, p.id
         LIMIT %s
        """,
        [client_id, limit],
    ).fetchall()


def decisions(conn: Conn, client_id, *, limit: int = PAGE_SIZE) -> list[Row]:
    """What was decided about the client's credit, newest first: credit approvals and rejections of its orders,
    limit changes (with their reason) and payments, each with its time, who and the figures it moved."""
    return conn.execute(
        """
        (SELECT o.decided_at AS at, CASE WHEN o.status = %(rejected)s THEN 'credit_rejected' ELSE 'credit_approved' END AS kind,
                d.full_name AS who, o.total_cents AS amount_cents, NULL::bigint AS before_cents, o.decision_note AS note,
                o.id AS order_id
           FROM orders o LEFT JOIN app_user d ON d.id = o.decided_by
          WHERE o.client_id = %(client)s AND o.decided_at IS NOT NULL
          ORDER BY o.decided_at DESC LIMIT %(limit)s)
        UNION ALL
        (SELECT a.occurred_at, 'limit_changed', coalesce(u.full_name, a.actor), (a.details ->> 'limit_after_cents')::bigint,
                (a.details ->> 'limit_before_cents')::bigint, a.details ->> 'reason', NULL
           FROM audit_log a LEFT JOIN app_user u ON u.username = a.actor
          WHERE a.object_type = 'client' AND a.object_id = %(client)s::text AND a.action = 'client.limit_changed'
          ORDER BY a.occurred_at DESC LIMIT %(limit)s)
        UNION ALL
        (SELECT p.created_at, 'payment', u.full_name, p.amount_cents, NULL, p.reference, NULL
           FROM payment p JOIN app_user u ON u.id = p.created_by
          WHERE p.client_id = %(client)s
          ORDER BY p.created_at DESC LIMIT %(limit)s)
        ORDER BY at DESC
        LIMIT %(limit)s
        """,
        {"client": client_id, "limit": limit, "rejected": OrderStatus.RECHAZADO},
    ).fetchall()
