"""The outbox payload of an order approved by credit, rebuilt from the stored order.

Order entry writes the same payload when an order is confirmed at once (nexo/orders/service.py,
_event_payload); the warehouse and the fiscal provider must not be able to tell an order that waited
for credit from one that did not. tests/integration/test_credit_decisions.py compares the two shapes.
"""

from __future__ import annotations


def order_event_payload(conn, order_id) -> dict:
    """The payload of `order.handoff_requested` and `billing.intent_recorded` for one stored order."""
    order = conn.execute(
        """
        SELECT o.id, o.warehouse_id, o.total_cents, c.id AS client_id, c.name AS client_name, c.tier
          FROM orders o JOIN client c ON c.id = o.client_id
         WHERE o.id = %s
        """, [order_id]).fetchone()
    lines = conn.execute(
        "SELECT sku, quantity, unit_price_cents FROM order_line WHERE order_id = %s ORDER BY sku",
        [order_id]).fetchall()
    return {
        "order_id": str(order["id"]),
        "client": {"id": str(order["client_id"]), "name": order["client_name"], "tier": order["tier"]},
        "warehouse_id": order["warehouse_id"],
        "currency": "ARS",
        "lines": [{"sku": line["sku"], "quantity": line["quantity"], "unit_price_cents": line["unit_price_cents"],
                   "amount_cents": line["quantity"] * line["unit_price_cents"]} for line in lines],
        "total_cents": order["total_cents"],
    }
