"""SQL of the order transaction (CU-01). Every function takes the caller's connection and never commits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple
from uuid import UUID

from psycopg.rows import DictRow

from nexo.db import Conn, array_literal, one_row
from nexo.states import BillingStatus, OrderStatus


@dataclass(frozen=True)
class Claim:
    """The idempotency row as the claim statement left it."""

    inserted: bool  # True: this transaction created the key; False: it existed (committed)
    request_hash: str
    fingerprint_version: int
    order_id: UUID | None


def claim_request(conn: Conn, request_id: UUID, request_hash: str, fingerprint_version: int) -> Claim:
    """Claim a requestId (ADR-005, ADR-007): insert it, or wait for and lock the committed row that has it.

    In READ COMMITTED, a concurrent transaction that inserted the same key makes this statement wait
    until it ends; if it committed we take the DO UPDATE path and see its row, if it rolled back our
    insert goes through. The no-op SET exists only to lock the row and return it; `xmax = 0` is true only
    for a freshly inserted tuple (ADR-007 explains why we accept this undocumented detail). Only valid in
    READ COMMITTED: under REPEATABLE READ a request that waited gets a serialization failure instead.
    """
    claimed = conn.execute(
        """
        INSERT INTO idempotency_keys (request_id, request_hash, fingerprint_version)
        VALUES (%s, %s, %s)
        ON CONFLICT (request_id) DO UPDATE SET request_id = EXCLUDED.request_id
        RETURNING (xmax = 0) AS inserted, request_hash, fingerprint_version, order_id
        """,
        [request_id, request_hash, fingerprint_version],
    )
    row = one_row(claimed)
    return Claim(row["inserted"], row["request_hash"], row["fingerprint_version"], row["order_id"])


@dataclass(frozen=True)
class OrderContext:
    """What the order needs to know before it writes: the client, whether the warehouse exists, the prices."""

    client: DictRow | None  # id, name, tier; None when the client does not exist
    warehouse_exists: bool
    products: dict[str, DictRow]  # by SKU: product_id, sku, price_cents (None: no price, RN-03)


def order_context(conn: Conn, client_id: UUID, warehouse_id: str, skus: list[str]) -> OrderContext:
    """The client, the warehouse check and the catalog rows of the SKUs with their list prices, in one read.

    One statement instead of three point lookups: every round trip inside the order transaction is
    time the client's and the stock rows' locks are held by someone.
    """
    rows = conn.execute(
        """
        SELECT c.id AS client_id, c.name AS client_name, c.tier AS client_tier,
               w.id IS NOT NULL AS warehouse_exists, p.id AS product_id, p.sku, pl.price_cents
          FROM (SELECT 1) AS one
          LEFT JOIN client c ON c.id = %(client)s
          LEFT JOIN warehouse w ON w.id = %(warehouse)s
          LEFT JOIN (product p LEFT JOIN price_list pl ON pl.product_id = p.id) ON p.sku = ANY(%(skus)s::text[])
        """,
        {"client": client_id, "warehouse": warehouse_id, "skus": array_literal(skus)},
    ).fetchall()
    first = rows[0]
    client = (
        None
        if first["client_id"] is None
        else {"id": first["client_id"], "name": first["client_name"], "tier": first["client_tier"]}
    )
    products = {
        r["sku"]: {"product_id": r["product_id"], "sku": r["sku"], "price_cents": r["price_cents"]}
        for r in rows
        if r["sku"] is not None
    }
    return OrderContext(client, first["warehouse_exists"], products)


class RecordedOrder(NamedTuple):
    """What record_order decided: the status, and the number people will name the order by (ADR-020)."""

    status: OrderStatus
    number: int


def record_order(
    conn: Conn,
    *,
    order_id: UUID,
    request_id: UUID,
    client_id: UUID,
    warehouse_id: str,
    salesperson_id: int,
    total_cents: int,
    delivery_method: str | None,
    lines: list[tuple[UUID, str, int, int]],
    api_key_id: int | None = None,
) -> RecordedOrder:
    """Decide credit, insert the order and its lines, point the key at it: one statement; returns the status
    and the order's number (ADR-020).

    RN-01 stays one conditional UPDATE of the client's row (the `charged` CTE): the decision and the
    write are one statement on that row, so two orders of one client serialise on it and never approve
    past the limit together. Within the limit → CONFIRMADO; over it → PENDIENTE_AUTORIZACION (RN-02's
    platinum tolerance is BLOCKED: every excess waits for the credit officer). Lines are
    (product_id, sku, quantity, unit_price_cents), the price copied from the price list (RN-03).
    api_key_id names the API key that posted the order (NULL: the browser form, ADR-015).
    """
    products, skus, quantities, prices = (array_literal(column) for column in zip(*lines, strict=True))
    decided = conn.execute(
        """
        WITH charged AS (
                 UPDATE client SET exposure_cents = exposure_cents + %(total)s
                  WHERE id = %(client)s AND exposure_cents + %(total)s <= credit_limit_cents
                 RETURNING id),
             decided AS (
                 SELECT CASE WHEN EXISTS (SELECT 1 FROM charged) THEN %(confirmed)s
                             ELSE %(pending)s END AS status),
             new_order AS (
                 INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents, charged_cents,
                                     billing_status, delivery_method, api_key_id)
                 SELECT %(order)s, %(client)s, %(warehouse)s, %(salesperson)s, status, %(total)s,
                        CASE status WHEN %(confirmed)s THEN %(total)s ELSE 0 END,
                        CASE status WHEN %(confirmed)s THEN %(to_invoice)s ELSE %(not_invoiced)s END,
                        %(delivery)s, %(api_key)s
                   FROM decided
                 RETURNING status, number),
             new_lines AS (
                 INSERT INTO order_line (order_id, product_id, sku, quantity, unit_price_cents)
                 SELECT %(order)s, product_id, sku, quantity, unit_price_cents
                   FROM unnest(%(products)s::uuid[], %(skus)s::text[], %(quantities)s::integer[],
                               %(prices)s::bigint[]) AS l(product_id, sku, quantity, unit_price_cents)),
             linked AS (
                 UPDATE idempotency_keys SET order_id = %(order)s WHERE request_id = %(request)s)
        SELECT status, number FROM new_order
        """,
        {
            "order": order_id,
            "request": request_id,
            "client": client_id,
            "warehouse": warehouse_id,
            "salesperson": salesperson_id,
            "total": total_cents,
            "delivery": delivery_method,
            "api_key": api_key_id,
            "products": products,
            "skus": skus,
            "quantities": quantities,
            "prices": prices,
            "confirmed": OrderStatus.CONFIRMADO,
            "pending": OrderStatus.PENDIENTE_AUTORIZACION,
            "to_invoice": BillingStatus.PENDIENTE_FACTURACION,
            "not_invoiced": BillingStatus.NO_APLICA,
        },
    )
    row = one_row(decided)
    return RecordedOrder(OrderStatus(row["status"]), row["number"])


def order_status(conn: Conn, order_id: UUID) -> OrderStatus | None:
    """The order's current status (a replay shows the order as it is now, not as it was)."""
    row = conn.execute("SELECT status FROM orders WHERE id = %s", [order_id]).fetchone()
    return OrderStatus(row["status"]) if row else None


def lock_order(conn: Conn, order_id: UUID) -> DictRow | None:
    """The order's state, locked until the end of the transaction (a cancel, a dispatch: guarantee 19).

    FOR NO KEY UPDATE, what the status UPDATE takes anyway: a credit decision, the relay recording the
    order's events and another cancel or dispatch of it wait for this transaction (one wins, CONTRACT.md).
    """
    return conn.execute(
        "SELECT id, status, client_id, warehouse_id, salesperson_id, total_cents, charged_cents, billing_status, created_at"
        " FROM orders WHERE id = %s FOR NO KEY UPDATE",
        [order_id],
    ).fetchone()


def mark_cancelled(conn: Conn, order_id: UUID, *, actor_id: int, reason: str) -> None:
    """ANULADO, with who and why; an invoice not issued yet is no longer to be issued (NO_APLICA), one
    issued stays FACTURADO until its credit note makes it ANULADA (ADR-017)."""
    conn.execute(
        "UPDATE orders SET status = %s, cancelled_at = now(), cancelled_by = %s, cancel_reason = %s,"
        " billing_status = CASE billing_status WHEN %s THEN billing_status ELSE %s END"
        " WHERE id = %s",
        [OrderStatus.ANULADO, actor_id, reason, BillingStatus.FACTURADO, BillingStatus.NO_APLICA, order_id],
    )


def give_back_charge(conn: Conn, client_id: UUID, cents: int) -> int:
    """Lower the client's exposure by what a cancelled order charged (RN-01, guarantee 19); the new exposure."""
    given_back = conn.execute(
        "UPDATE client SET exposure_cents = exposure_cents - %s WHERE id = %s RETURNING exposure_cents", [cents, client_id]
    )
    return one_row(given_back)["exposure_cents"]
