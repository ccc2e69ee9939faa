"""The API's request and response shapes (pydantic). Spectree validates requests with them and writes
the OpenAPI 3.1 document from them, so the document cannot drift from what the code accepts."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from nexo.orders.commands import MAX_LINE_QUANTITY, MAX_LINES
from nexo.states import OrderStatus

# No control characters (Unicode Cc: C0, DEL, C1) in any text an integration sends: they have no place
# in a SKU, a warehouse code or a delivery method; the same set the forms refuse (nexo/form_input.py).
_PRINTABLE = r"^[^\x00-\x1f\x7f-\x9f]*$"
Printable = Annotated[StrictStr, Field(pattern=_PRINTABLE)]


class LineIn(BaseModel):
    """One line as the integration asks for it; the price always comes from the server (RN-03)."""

    model_config = ConfigDict(extra="forbid")
    sku: Annotated[Printable, Field(min_length=1, max_length=40)]
    # A JSON integer: "2", 2.0 and true are refused rather than guessed at.
    quantity: Annotated[StrictInt, Field(ge=1, le=MAX_LINE_QUANTITY)]


class OrderIn(BaseModel):
    """POST /api/v1/orders: the same intent as the order form (CONTRACT.md)."""

    model_config = ConfigDict(extra="forbid")
    client_id: uuid.UUID
    deposit_id: Annotated[Printable, Field(min_length=1, max_length=16)]
    lines: Annotated[list[LineIn], Field(min_length=1, max_length=MAX_LINES)]
    delivery_method: Annotated[Printable, Field(max_length=60)] | None = None


class OrdersQuery(BaseModel):
    """GET /api/v1/orders query: filter, page size and the opaque cursor of the previous page."""

    model_config = ConfigDict(extra="forbid")
    status: OrderStatus | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    cursor: Annotated[str, Field(max_length=200, pattern=r"^[A-Za-z0-9_-]*$")] | None = None


class LineOut(BaseModel):
    """A line of an order, at the list price charged."""

    sku: str
    quantity: int
    unit_price_cents: int


class EventOut(BaseModel):
    """An outbox event of the order (ADR-004): warehouse handoff or billing intent, and its status."""

    type: str
    status: str


class OrderOut(BaseModel):
    """The order as it is now (a replay shows the current status, see ADR-015)."""

    id: uuid.UUID
    status: OrderStatus
    billing_status: str
    client_id: uuid.UUID
    deposit_id: str
    delivery_method: str | None
    total_cents: int
    created_at: datetime
    lines: list[LineOut]
    events: list[EventOut]


class OrderPage(BaseModel):
    """One page of the caller's orders, newest first; next_cursor is null on the last page."""

    orders: list[OrderOut]
    next_cursor: str | None


class CatalogQuery(BaseModel):
    """GET /api/v1/catalog query, all optional: without `limit`, every product (CONTRACT.md)."""

    model_config = ConfigDict(extra="forbid")
    q: Annotated[str, Field(max_length=40)] | None = None  # a prefix of the SKU or of the name
    limit: Annotated[int, Field(ge=1, le=500)] | None = None
    cursor: Annotated[str, Field(max_length=200, pattern=r"^[A-Za-z0-9_-]*$")] | None = None


class CatalogItem(BaseModel):
    """A product, its list price (null: no authoritative price, RN-03) and units available per warehouse."""

    sku: str
    name: str
    price_cents: int | None
    available: dict[str, int]


class Catalog(BaseModel):
    """GET /api/v1/catalog; next_cursor is null unless `limit` cut the list short."""

    items: list[CatalogItem]
    next_cursor: str | None = None


class Problem(BaseModel):
    """RFC 9457 problem details; `reason` is one of CONTRACT.md's words, `errors` only for invalid_request."""

    type: str
    title: str
    status: int
    detail: str
    reason: str
    errors: dict[str, list[str]] | None = None
