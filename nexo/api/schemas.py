"""The API's request and response shapes (pydantic). Spectree validates requests with them and writes
the OpenAPI 3.1 document from them, so the document cannot drift from what the code accepts."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr

from nexo.credit.payments import MAX_AMOUNT_CENTS
from nexo.orders.cancel import MAX_REASON
from nexo.orders.commands import MAX_LINE_QUANTITY, MAX_LINES
from nexo.orders.dispatch import MAX_QUANTITY as MAX_SHIP_QUANTITY
from nexo.states import BillingStatus, EventStatus, OrderStatus

# No control characters (Unicode Cc: C0, DEL, C1) in any text an integration sends: they have no place
# in a SKU, a warehouse code or a delivery method; the same set the forms refuse (nexo/form_input.py).
_PRINTABLE = r"^[^\x00-\x1f\x7f-\x9f]*$"
Printable = Annotated[StrictStr, Field(pattern=_PRINTABLE)]


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("must contain more than spaces")
    return text.strip()


# Free text a person reads later (a cancel's reason, a payment's reference): printable, not only spaces,
# kept without the spaces around it.
Said = Annotated[Printable, AfterValidator(_not_blank)]
# The events of an order (ADR-004) and their cancellations (ADR-017); the CHECK on outbox_event.event_type.
EventType = Literal["order.handoff_requested", "billing.intent_recorded", "order.handoff_cancelled", "billing.intent_cancelled"]
# A payment's reference (a receipt, a transfer number): room for any bank's, not for a document.
MAX_REFERENCE = 200


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
    """A line of an order, at the list price charged, and how many of its units left the warehouse."""

    sku: str
    quantity: int
    unit_price_cents: int
    dispatched: int


class EventOut(BaseModel):
    """An outbox event of the order (ADR-004): the warehouse handoff, the billing intent and, after a cancel,
    their cancellations (ADR-017); RETIRADO: withdrawn with the cancel, the destination never saw it."""

    type: EventType
    status: EventStatus


class OrderOut(BaseModel):
    """The order as it is now (a replay shows the current status, see ADR-015)."""

    id: uuid.UUID
    status: OrderStatus
    billing_status: BillingStatus
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


class CancelIn(BaseModel):
    """POST /api/v1/orders/{order_id}/cancel: why the order is withdrawn (kept in the audit log)."""

    model_config = ConfigDict(extra="forbid")
    reason: Annotated[Said, Field(min_length=1, max_length=MAX_REASON, description="Not only spaces; no control characters.")]


class ShipLineIn(BaseModel):
    """What left of one line: a SKU of the order and how many units (a JSON integer)."""

    model_config = ConfigDict(extra="forbid")
    sku: Annotated[Printable, Field(min_length=1, max_length=40)]
    quantity: Annotated[StrictInt, Field(ge=1, le=MAX_SHIP_QUANTITY)]


class ShipmentIn(BaseModel):
    """POST /api/v1/orders/{order_id}/shipments: what left the warehouse, per line, each SKU once."""

    model_config = ConfigDict(extra="forbid")
    lines: Annotated[list[ShipLineIn], Field(min_length=1, max_length=MAX_LINES)]


class ShippedLine(BaseModel):
    """A line of a shipment."""

    sku: str
    quantity: int


class ShipmentOut(BaseModel):
    """A shipment: what left the warehouse for an order, once."""

    id: uuid.UUID
    order_id: uuid.UUID
    lines: list[ShippedLine]
    created_at: datetime


class PaymentIn(BaseModel):
    """POST /api/v1/clients/{client_id}/payments: what the client paid, in cents, and its reference."""

    model_config = ConfigDict(extra="forbid")
    # A JSON integer of cents: 1234.56 (pesos) or "123456" is refused rather than guessed at.
    amount_cents: Annotated[StrictInt, Field(ge=1, le=MAX_AMOUNT_CENTS)]
    reference: Annotated[
        Said, Field(min_length=1, max_length=MAX_REFERENCE, description="The receipt or transfer; not only spaces.")
    ]


class PaymentOut(BaseModel):
    """A payment, and the client's exposure now (what it still owes, after this payment and any since)."""

    id: uuid.UUID
    client_id: uuid.UUID
    amount_cents: int
    reference: str
    created_at: datetime
    exposure_cents: int


class RemainingLine(BaseModel):
    """exceeds_remaining: a line asked for more units than remain to dispatch."""

    sku: str
    quantity: int
    remaining: int


class Problem(BaseModel):
    """RFC 9457 problem details; `reason` is one of CONTRACT.md's words, `errors` only for invalid_request."""

    type: str
    title: str
    status: int
    detail: str
    reason: str
    errors: dict[str, list[str]] | None = None
    remaining: list[RemainingLine] | None = None  # exceeds_remaining only
    exposure_cents: int | None = None  # payment_exceeds_exposure only: what the client owes now
