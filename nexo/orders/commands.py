"""The CU-01 command and its outcomes: plain values the views (and other callers) map to HTTP."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from nexo.orders.fingerprint import normalise_sku
from nexo.states import OrderStatus

# The short names of create_order's outcomes (the result classes below), for logs and metric labels.
CONFIRMED = "confirmed"  # new order within the credit limit (RN-01)
PENDING_AUTHORIZATION = "pending_authorization"  # new order over the limit, waits for credit (RN-02)
REPLAYED = "replayed"  # same requestId, same fingerprint: the original order (RN-06)
CONFLICT = "conflict"  # same requestId, other content: request_id_reused (ADR-005)
REJECTED = "rejected"  # business rejection, nothing persisted (ADR-005)
INVALID = "invalid"  # malformed command (unknown client or warehouse)

# Business rejection reasons (CONTRACT.md; kept verbatim because pages and tests look for them).
INVALID_SKU = "invalid_sku"
INSUFFICIENT_STOCK = "insufficient_stock"
PRICE_SOURCE_UNAVAILABLE = "price_source_unavailable"
REQUEST_ID_REUSED = "request_id_reused"


@dataclass(frozen=True)
class OrderLineRequest:
    """One line as the salesperson asked for it: a SKU (any spelling) and a quantity."""

    sku: str
    quantity: int


@dataclass(frozen=True)
class CreateOrder:
    """Create one order for one salesperson intent, identified by request_id (RN-06)."""

    request_id: uuid.UUID
    client_id: uuid.UUID
    warehouse_id: str
    lines: tuple[OrderLineRequest, ...]
    salesperson_id: int
    delivery_method: str | None = None
    correlation_id: str | None = None  # the HTTP request id, copied to outbox rows for log correlation
    api_key_id: int | None = None  # where the order came from: None = the browser form (ADR-015)


@dataclass(frozen=True)
class LineProblem:
    """Why one line was refused: its SKU as typed, and a rejection reason."""

    sku: str
    reason: str


@dataclass(frozen=True)
class Confirmed:
    """A new order within the client's credit limit (RN-01): stock reserved FIRME, events in the outbox."""

    order_id: uuid.UUID
    outcome: ClassVar[str] = CONFIRMED
    order_status: ClassVar[OrderStatus] = OrderStatus.CONFIRMADO


@dataclass(frozen=True)
class PendingAuthorization:
    """A new order over the credit limit: stock reserved BLANDA, it waits for the credit officer (RN-02)."""

    order_id: uuid.UUID
    outcome: ClassVar[str] = PENDING_AUTHORIZATION
    order_status: ClassVar[OrderStatus] = OrderStatus.PENDIENTE_AUTORIZACION


@dataclass(frozen=True)
class Replayed:
    """The same requestId with the same content: the original order, in whatever state it is now (RN-06)."""

    order_id: uuid.UUID
    order_status: OrderStatus
    outcome: ClassVar[str] = REPLAYED


@dataclass(frozen=True)
class Conflict:
    """The same requestId with other content (request_id_reused, ADR-005); nothing was written."""

    outcome: ClassVar[str] = CONFLICT


@dataclass(frozen=True)
class Rejected:
    """A business rejection: every failing line with its reason; nothing persisted, key included (ADR-005)."""

    problems: tuple[LineProblem, ...]
    outcome: ClassVar[str] = REJECTED

    @property
    def reasons(self) -> tuple[str, ...]:
        """The distinct rejection reasons, in order of first appearance."""
        return tuple(dict.fromkeys(p.reason for p in self.problems))


@dataclass(frozen=True)
class Invalid:
    """A malformed command (empty, duplicated SKUs, unknown client or warehouse): errors per form field."""

    field_errors: dict[str, str] = field(default_factory=dict)
    outcome: ClassVar[str] = INVALID


# What create_order decided; the view maps each case to 303 / 409 / 422 / 400 (CONTRACT.md). `outcome`
# is each case's short name, for logs and metric labels.
OrderResult = Confirmed | PendingAuthorization | Replayed | Conflict | Rejected | Invalid


# Input sanity bounds, not business rules: they only stop typos and hostile posts from reaching the
# database (nobody orders 100,001 units in one line of a web form; a larger real order is split).
MAX_LINE_QUANTITY = 100_000
MAX_LINES = 50


def validate(cmd: CreateOrder) -> dict[str, str]:
    """Shape errors of a command that no database lookup is needed to see (empty, duplicates, quantities)."""
    errors: dict[str, str] = {}
    if not cmd.lines:
        errors["lines"] = "El pedido necesita al menos una línea."
    elif len(cmd.lines) > MAX_LINES:
        errors["lines"] = f"Un pedido admite hasta {MAX_LINES} líneas."
    seen: set[str] = set()
    for line in cmd.lines:
        sku = normalise_sku(line.sku)
        if not sku:
            errors["lines"] = "Cada línea necesita un SKU."
        elif sku in seen:
            errors["lines"] = f"El SKU {sku} aparece en más de una línea: sumá las cantidades en una sola."
        seen.add(sku)
        if isinstance(line.quantity, bool) or not isinstance(line.quantity, int) or not 0 < line.quantity <= MAX_LINE_QUANTITY:
            errors["lines"] = f"Cada cantidad debe ser un número entero entre 1 y {MAX_LINE_QUANTITY:,}.".replace(",", ".")
    if not cmd.warehouse_id:
        errors["deposit_id"] = "Elegí un depósito."
    return errors
