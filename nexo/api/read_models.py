"""The order JSON of CONTRACT.md ("Orders API") built from the database, and the catalog."""

from __future__ import annotations

from nexo.api import repository as repo
from nexo.auth.service import User
from nexo.orders import queries as order_queries
from nexo.orders.views import ORDER_VIEWER_PERMISSIONS  # the order page's rule, kept in one place


def may_view(header: dict, user: User) -> bool:
    """True when the user entered the order or may read everyone's."""
    return header["salesperson_id"] == user.id or any(user.can(p) for p in ORDER_VIEWER_PERMISSIONS)


def visible_order(conn, order_id, user: User) -> dict | None:
    """The order JSON, or None when it does not exist or the user may not see it (both look the same)."""
    header = repo.order(conn, order_id)
    if header is None or not may_view(header, user):
        return None
    return _with_details(conn, [header])[0]


def orders_page(conn, salesperson_id: int, *, status, after, limit: int) -> tuple[list[dict], tuple | None]:
    """A page of the salesperson's orders and the keyset of its last row when another page follows."""
    rows = repo.orders_page(conn, salesperson_id, status=status, after=after, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    last = (rows[-1]["created_at"], rows[-1]["id"]) if more else None
    return _with_details(conn, rows), last


def catalog(conn) -> list[dict]:
    """The catalog items: SKU, name, list price (None: no authoritative price) and availability.

    Every product, as CONTRACT.md has it (the order form's SKU lookup with `limit=None`: LIMIT NULL is
    no limit). With tens of thousands of SKUs this wants the lookup's prefix and pages (issue 14).
    """
    return [{"sku": row["sku"], "name": row["name"], "price_cents": row["price_cents"],
             "available": dict(row["available"])} for row in order_queries.find_skus(conn, "", limit=None)]


def _with_details(conn, headers: list[dict]) -> list[dict]:
    # Two statements for the whole page, whatever its size (no query per order).
    ids = [h["id"] for h in headers]
    lines: dict = {i: [] for i in ids}
    events: dict = {i: [] for i in ids}
    if ids:
        for line in repo.lines_of(conn, ids):
            lines[line["order_id"]].append({"sku": line["sku"], "quantity": line["quantity"],
                                            "unit_price_cents": line["unit_price_cents"]})
        for event in repo.events_of(conn, ids):
            events[event["order_id"]].append({"type": event["type"], "status": event["status"]})
    return [{"id": h["id"], "status": h["status"], "billing_status": h["billing_status"],
             "client_id": h["client_id"], "deposit_id": h["deposit_id"], "delivery_method": h["delivery_method"],
             "total_cents": h["total_cents"], "created_at": h["created_at"], "lines": lines[h["id"]],
             "events": events[h["id"]]} for h in headers]
