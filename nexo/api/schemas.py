"""The API's request and response shapes (pydantic). Spectree validates requests with them and writes
the OpenAPI 3.1 document from them, so the document cannot drift from what the code accepts."""

from __future__ import annotations

import re
import uuid
from datetime import date, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, StrictStr

from nexo.api.cursors import ORDER_CURSOR_PATTERN, SKU_CURSOR_PATTERN
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


def _integral(value: object) -> object:
    # JSON has one number type: 2.0 is the integer 2 to JSON Schema, so the document's "integer" accepts it
    # and so do we. 2.5, "2" and true are still refused (StrictInt), never rounded or guessed at.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# A JSON integer (a quantity, an amount in cents): what the document's "integer" means. The bounds of each
# use stand before this validator in its Annotated, so that pydantic writes them into the document as
# minimum and maximum (after it, they were enforced but documented as unknown keywords, and 0 looked valid).
WHOLE = BeforeValidator(_integral)


def _iso_day(value: object) -> object:
    # The document says "format": "date" (RFC 3339's full-date): pydantic alone also reads "0" or a number
    # of seconds as a day, which the document calls invalid; only YYYY-MM-DD is one here.
    if isinstance(value, str) and not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        raise ValueError("a day is written YYYY-MM-DD")
    return value


Day = Annotated[date, BeforeValidator(_iso_day)]


# Free text a person reads later (a cancel's reason, a payment's reference): printable, not only spaces,
# kept without the spaces around it.
Said = Annotated[Printable, AfterValidator(_not_blank)]
# The events of an order (ADR-004) and their cancellations (ADR-017); the CHECK on outbox_event.event_type.
EventType = Literal[
    "order.handoff_requested", "billing.intent_recorded", "order.handoff_cancelled", "billing.intent_cancelled", "webhook.notice"
]
# What a webhook subscription may ask to hear about (ADR-022; nexo/outbox/webhooks.py EVENTS).
WebhookEvent = Literal[
    "order.confirmed",
    "order.pending_authorization",
    "order.approved",
    "order.rejected",
    "order.cancelled",
    "order.dispatched",
    "order.invoiced",
]
# A payment's reference (a receipt, a transfer number): room for any bank's, not for a document.
MAX_REFERENCE = 200


class LineIn(BaseModel):
    """One line as the integration asks for it; the price always comes from the server (RN-03)."""

    model_config = ConfigDict(extra="forbid")
    sku: Annotated[Printable, Field(min_length=1, max_length=40)]
    # A JSON integer: "2", 2.5 and true are refused rather than guessed at.
    quantity: Annotated[StrictInt, Field(ge=1, le=MAX_LINE_QUANTITY), WHOLE]


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
    # Exactly what names an order (nexo.formatting.parse_order_number reads every string of this form): a
    # number no order has is an empty list, like any filter that matches nothing.
    number: (
        Annotated[str, Field(max_length=24, pattern=r"^(?:[Pp]-?)?0*[1-9][0-9]{0,17}$", description="P-000123 or 123")] | None
    ) = None
    client_id: uuid.UUID | None = None
    sku: Annotated[Printable, Field(min_length=1, max_length=40)] | None = None
    created_from: Day | None = Field(default=None, description="First day (Argentina), inclusive")
    created_to: Day | None = Field(default=None, description="Last day (Argentina), inclusive")
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    # Every string of this form is a place in the list (nexo/api/cursors.py); any other is a 400.
    cursor: Annotated[str, Field(pattern=ORDER_CURSOR_PATTERN, description="next_cursor of the previous page")] | None = None


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
    number: str = Field(pattern=r"^P-[0-9]{6,}$", description="The number people say (P-000123); id stays the key.")
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
    q: Annotated[Printable, Field(max_length=40)] | None = None  # words, each in the SKU or the name (a prefix of either, too)
    limit: Annotated[int, Field(ge=1, le=500)] | None = None
    cursor: Annotated[str, Field(pattern=SKU_CURSOR_PATTERN, description="next_cursor of the previous page")] | None = None


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
    quantity: Annotated[StrictInt, Field(ge=1, le=MAX_SHIP_QUANTITY), WHOLE]


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
    # A JSON integer of cents: 1234.56 (pesos) or "123456" is refused rather than guessed at (123456.0 is 123456).
    amount_cents: Annotated[StrictInt, Field(ge=1, le=MAX_AMOUNT_CENTS), WHOLE]
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
    """RFC 9457 problem details; `reason` is one of CONTRACT.md's words, `errors` for invalid_request
    and unknown_reference."""

    type: str
    title: str
    status: int
    detail: str
    reason: str
    errors: dict[str, list[str]] | None = None
    remaining: list[RemainingLine] | None = None  # exceeds_remaining only
    exposure_cents: int | None = None  # payment_exceeds_exposure only: what the client owes now


def _distinct(events: list[str]) -> list[str]:
    if len(set(events)) != len(events):
        raise ValueError("an event is listed twice")
    return events


# A subscription URL as the document declares it (ADR-022): http(s), a host name or IPv4 address, an optional
# port 1-65535, then printable ASCII. No credentials (the signature authenticates Nexo) and no IPv6 literal;
# what only the environment decides (https to a public address in production) stays a 400 of its own.
_PORT = r"(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"
WEBHOOK_URL_PATTERN = rf"^https?://[A-Za-z0-9.-]+(:{_PORT})?([/?#][!-~]*)?$"


class WebhookIn(BaseModel):
    """POST /api/v1/webhooks: where to send notices about this key's orders, and which ones."""

    model_config = ConfigDict(extra="forbid")
    url: Annotated[
        StrictStr,
        Field(
            min_length=8,
            max_length=2000,
            pattern=WEBHOOK_URL_PATTERN,
            description="Absolute http(s) URL without credentials; in production https to a public address "
            "(no private, loopback or local hosts).",
        ),
    ]
    events: Annotated[
        list[WebhookEvent], Field(min_length=1, max_length=7, json_schema_extra={"uniqueItems": True}), AfterValidator(_distinct)
    ]


class WebhookOut(BaseModel):
    """A live subscription (its secret is shown only when it is created)."""

    id: int
    url: str
    events: list[WebhookEvent]
    created_at: datetime


class WebhookCreated(WebhookOut):
    """The new subscription and its signing secret: keep it, it is not shown again."""

    secret: str = Field(description="HMAC-SHA256 key of X-Nexo-Signature (t=<unix seconds>,v1=<hex of '<t>.' + body>).")


class WebhookList(BaseModel):
    """The key's live subscriptions, oldest first."""

    webhooks: list[WebhookOut]
