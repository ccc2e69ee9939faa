"""SQL of dispatches: shipments and their lines. Every function takes the caller's connection and never commits."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from psycopg.rows import DictRow

from nexo.db import Conn, one_row
from nexo.states import OrderStatus


@dataclass(frozen=True)
class ShipmentClaim:
    """The shipment row as the claim left it: this transaction's new one, or the one the key already had."""

    inserted: bool
    shipment_id: uuid.UUID
    order_id: uuid.UUID
    request_hash: str | None


def claim_shipment(
    conn: Conn,
    *,
    shipment_id: uuid.UUID,
    order_id: uuid.UUID,
    actor_id: int,
    api_key_id: int | None,
    idempotency_key: uuid.UUID | None,
    request_hash: str | None,
) -> ShipmentClaim:
    """Insert the shipment, or — for an Idempotency-Key already used — wait for and return the one that has it.

    The claim of ADR-007, for shipments: a second request with the key waits on the first's row; if the
    first committed, this one sees it (`xmax = 0` is false), if it rolled back, this insert goes through.
    """
    claimed = conn.execute(
        """
        INSERT INTO shipment (id, order_id, created_by, api_key_id, idempotency_key, request_hash)
        VALUES (%s, %s, %s, %s, %s, %s)
        ON CONFLICT (idempotency_key) DO UPDATE SET idempotency_key = EXCLUDED.idempotency_key
        RETURNING (xmax = 0) AS inserted, id, order_id, request_hash
        """,
        [shipment_id, order_id, actor_id, api_key_id, idempotency_key, request_hash],
    )
    row = one_row(claimed)
    return ShipmentClaim(row["inserted"], row["id"], row["order_id"], row["request_hash"])


def add_lines(conn: Conn, shipment_id: uuid.UUID, lines: list[tuple[uuid.UUID, str, str, int]]) -> None:
    """The shipment's lines, (product_id, warehouse_id, sku, quantity) each, in one statement."""
    products, warehouses, skus, quantities = (list(column) for column in zip(*lines, strict=True))
    conn.execute(
        "INSERT INTO shipment_line (shipment_id, product_id, warehouse_id, sku, quantity)"
        " SELECT %s, product_id, warehouse_id, sku, quantity"
        "   FROM unnest(%s::uuid[], %s::text[], %s::text[], %s::integer[]) AS l(product_id, warehouse_id, sku, quantity)",
        [shipment_id, products, warehouses, skus, quantities],
    )


def mark_dispatched(conn: Conn, order_id: uuid.UUID, *, complete: bool) -> OrderStatus:
    """DESPACHADO when nothing is left to dispatch, DESPACHADO_PARCIAL otherwise; return the new status."""
    status = OrderStatus.DESPACHADO if complete else OrderStatus.DESPACHADO_PARCIAL
    conn.execute("UPDATE orders SET status = %s WHERE id = %s", [status, order_id])
    return status


def shipment(conn: Conn, shipment_id: uuid.UUID) -> DictRow | None:
    """One shipment with its lines (sku, quantity), for an answer or a replay."""
    return conn.execute(
        """
        SELECT s.id, s.order_id, s.created_at,
               coalesce((SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity) ORDER BY l.sku)
                           FROM shipment_line l WHERE l.shipment_id = s.id), '[]') AS lines
          FROM shipment s WHERE s.id = %s
        """,
        [shipment_id],
    ).fetchone()
