"""The outbox payload of an order approved by credit, rebuilt from the stored order.

Order entry builds the same payload in memory when an order is confirmed at once; both go through
nexo.outbox.order_events.order_payload, so the warehouse and the fiscal provider cannot tell an order
that waited for credit from one that did not (tests/integration/test_credit_decisions.py checks it).
"""

from __future__ import annotations

from uuid import UUID

from nexo.db import Conn, one_row
from nexo.outbox.order_events import order_payload


def order_event_payload(conn: Conn, order_id: UUID) -> dict:
    """The payload of `order.handoff_requested` and `billing.intent_recorded` for one stored order."""
    found = conn.execute(
        """
        SELECT o.id, o.number, o.warehouse_id, o.total_cents, c.id AS client_id, c.name AS client_name, c.tier
          FROM orders o JOIN client c ON c.id = o.client_id
         WHERE o.id = %s
        """,
        [order_id],
    )
    order = one_row(found)  # the order the decision just locked
    lines = conn.execute(
        "SELECT sku, quantity, unit_price_cents FROM order_line WHERE order_id = %s ORDER BY sku", [order_id]
    ).fetchall()
    return order_payload(
        order_id=order["id"],
        number=order["number"],
        client_id=order["client_id"],
        client_name=order["client_name"],
        tier=order["tier"],
        warehouse_id=order["warehouse_id"],
        total_cents=order["total_cents"],
        lines=[(line["sku"], line["quantity"], line["unit_price_cents"]) for line in lines],
    )
