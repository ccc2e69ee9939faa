"""The order JSON of CONTRACT.md ("Orders API") built from the database, and the catalog."""

from __future__ import annotations

from uuid import UUID

from nexo.api import repository as repo
from nexo.auth.service import User
from nexo.db import Conn
from nexo.formatting import format_order_number
from nexo.orders import queries as order_queries
from nexo.orders.finder import OrderFilters
from nexo.orders.views import ORDER_VIEWER_PERMISSIONS  # the order page's rule, kept in one place


def may_view(header: dict, user: User) -> bool:
    """True when the user entered the order or may read everyone's."""
    return header["salesperson_id"] == user.id or any(user.can(p) for p in ORDER_VIEWER_PERMISSIONS)


def visible_order(conn: Conn, order_id: UUID, user: User) -> dict | None:
    """The order JSON, or None when it does not exist or the user may not see it (both look the same).

    One statement: callers may read it in autocommit (Database.reading_one)."""
    header = repo.order(conn, order_id)
    if header is None or not may_view(header, user):
        return None
    return _order_json(header)


def order(conn: Conn, order_id: UUID) -> dict | None:
    """The order JSON for a caller that has already checked who may see it (a use case did), or None."""
    header = repo.order(conn, order_id)
    return None if header is None else _order_json(header)


def orders_page(
    conn: Conn, salesperson_id: int, *, filters: OrderFilters, after: repo.Keyset | None, limit: int
) -> tuple[list[dict], repo.Keyset | None]:
    """A page of the salesperson's orders that match the filters, and the keyset of its last row when another follows."""
    rows = repo.orders_page(conn, salesperson_id, filters=filters, after=after, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    last = (rows[-1]["created_at"], rows[-1]["id"]) if more else None
    return [_order_json(row) for row in rows], last


def catalog(conn: Conn, *, text: str = "", after: str | None = None, limit: int | None = None) -> tuple[list[dict], str | None]:
    """Catalog items (SKU, name, list price or None, availability) by SKU, and the last SKU when more follow.

    The order form's SKU lookup: `text` words each found in the SKU or the name, `after` a SKU to
    start past. Without `limit` every matching product, as CONTRACT.md has it; with tens of
    thousands of SKUs that is megabytes and a costly call (ADR-015), so integrations page.
    """
    rows = order_queries.find_skus(conn, text, limit=None if limit is None else limit + 1, after=after)
    more = limit is not None and len(rows) > limit
    rows = rows[:limit] if more else rows
    items = [
        {"sku": row["sku"], "name": row["name"], "price_cents": row["price_cents"], "available": dict(row["available"])}
        for row in rows
    ]
    return items, rows[-1]["sku"] if more else None


def _order_json(row: dict) -> dict:
    return {
        "id": row["id"],
        "number": format_order_number(row["number"]),
        "status": row["status"],
        "billing_status": row["billing_status"],
        "client_id": row["client_id"],
        "deposit_id": row["deposit_id"],
        "delivery_method": row["delivery_method"],
        "total_cents": row["total_cents"],
        "created_at": row["created_at"],
        "lines": row["lines"],
        "events": row["events"],
    }
