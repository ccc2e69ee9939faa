"""The destinations of the outbox and the events each receives, in one list: adding one is an entry here plus its fake.

Everything that varies per destination lives in its entry: where its base URL is set and its Spanish
label. Everything that varies per event type lives in its route: the destination, the path it is
POSTed to, the field of the answer that carries the business effect and what that effect writes on the
order, how to ask whether an Idempotency-Key was applied, and — for a cancellation — the body field that
names the original it undoes (ADR-017). The relay, the dead-letter pages, the key check and the
operations page read these lists; none of them names a destination. (The database's CHECK constraints
on outbox_event and dead_letter list them too: a new one needs a migration.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from nexo.db import Conn
from nexo.outbox import webhooks
from nexo.settings import Settings
from nexo.states import BillingStatus
from nexo.vocabulary import DESTINATION

# A relay batch's (order id, effect) pairs: the invoice number, credit note or ticket each delivered event
# brought back.
Effects = list[tuple[UUID, str | None]]
# Each writer takes a relay batch's (order id, effect) pairs and writes them in one statement; the relay
# has already locked those orders in id order, so two workers' batches never deadlock (ADR-008).
EffectWriter = Callable[[Conn, Effects], None]


def _write(sql: str, *values: object) -> EffectWriter:
    # values: the statement's parameters before the (order id, effect) arrays (the state it writes, say);
    # the arrays go in binary (%b), like the rest of the relay's batch SQL (outbox/repository.py says why)
    def write(conn: Conn, effects: Effects) -> None:
        conn.execute(sql, [*values, [order_id for order_id, _ in effects], [effect for _, effect in effects]])

    return write


# The fiscal provider's effects on the order: billed with its invoice number; a credit note cancels it.
_billed = _write(
    "UPDATE orders o SET billing_status = %s, invoice_number = v.effect"
    " FROM unnest(%b::uuid[], %b::text[]) AS v(id, effect) WHERE o.id = v.id",
    BillingStatus.FACTURADO,
)
_credited = _write(
    "UPDATE orders o SET billing_status = %s, credit_note_number = v.effect"
    " FROM unnest(%b::uuid[], %b::text[]) AS v(id, effect) WHERE o.id = v.id",
    BillingStatus.ANULADA,
)
# The warehouse's effect on the order: the preparation ticket Sergio works from (a cancellation closes
# it at the warehouse; the order's own state already says ANULADO).
_handed_off = _write(
    "UPDATE orders o SET handoff_ticket = v.effect FROM unnest(%b::uuid[], %b::text[]) AS v(id, effect) WHERE o.id = v.id"
)


def _nothing(_conn: Conn, _effects: Effects) -> None:
    return None


def _billed_and_announced(conn: Conn, effects: Effects) -> None:
    # An invoice is news for the integration that posted the order (ADR-022): its notice is written with
    # the invoice number, in the same transaction.
    _billed(conn, effects)
    webhooks.notify_many(conn, [order_id for order_id, _ in effects], "order.invoiced")


@dataclass(frozen=True)
class Destination:
    """One place the outbox delivers to (see the module docstring)."""

    name: str  # outbox_event.destination, dead_letter.destination
    url_setting: str | None  # the Settings field with its base URL (FISCAL_URL → fiscal_url); None: per event
    label: str  # for people, in Spanish
    # One service behind every event (fiscal, warehouse): after a timeout the lane probes with one event.
    # Webhooks reach many receivers, and one that does not answer says nothing about the others.
    one_receiver: bool = True

    def base_url(self, settings: Settings) -> str | None:
        """Its configured base URL, or None when the setting is empty (or the URL is each event's own)."""
        return getattr(settings, self.url_setting) if self.url_setting else None

    def url_variable(self) -> str:
        """The environment variable that sets its base URL (for messages to an operator)."""
        return (self.url_setting or "").upper()


@dataclass(frozen=True)
class Route:
    """How one event type reaches its destination (see the module docstring)."""

    event_type: str
    destination: str
    path: str  # events are POSTed here, Idempotency-Key = event id
    effect_field: str | None  # the field of a 2xx answer that carries the effect; None: any 2xx will do
    record_effects: EffectWriter  # (conn, [(order id, effect)]): writes them on the orders
    lookup_path: str | None  # GET: 200 when that key was applied, 404 when not; None: cannot be asked
    label: str  # what the destination made of it, for people ("factura", "nota de crédito")
    cancels: str | None = None  # a cancellation: the body field with its original's key (ADR-017)

    def url(self, base_url: str) -> str:
        """Where its events are POSTed."""
        return base_url.rstrip("/") + self.path

    def lookup_url(self, base_url: str, key: str) -> str:
        """Where to ask whether `key` was applied (only for a route with a lookup_path)."""
        return base_url.rstrip("/") + (self.lookup_path or "").format(key=key)


DESTINATIONS: dict[str, Destination] = {
    d.name: d
    for d in (
        Destination(name="fiscal", url_setting="fiscal_url", label=DESTINATION["fiscal"]),
        Destination(name="warehouse", url_setting="warehouse_url", label=DESTINATION["warehouse"]),
        # Each notice goes to its subscription's URL, signed with its secret (ADR-022, webhooks.py).
        Destination(name=webhooks.DESTINATION, url_setting=None, label=DESTINATION["webhook"], one_receiver=False),
    )
}
ROUTES: dict[str, Route] = {
    r.event_type: r
    for r in (
        Route(
            event_type="billing.intent_recorded",
            destination="fiscal",
            path="/invoices",
            effect_field="invoice_number",
            record_effects=_billed_and_announced,
            lookup_path="/invoices/{key}",
            label="factura",
        ),
        Route(
            event_type="order.handoff_requested",
            destination="warehouse",
            path="/handoffs",
            effect_field="ticket",
            record_effects=_handed_off,
            lookup_path="/handoffs/{key}",
            label="orden de preparación",
        ),
        Route(
            event_type="billing.intent_cancelled",
            destination="fiscal",
            path="/credit-notes",
            effect_field="credit_note_number",
            record_effects=_credited,
            lookup_path="/credit-notes/{key}",
            label="nota de crédito",
            cancels="invoice_key",
        ),
        Route(
            event_type="order.handoff_cancelled",
            destination="warehouse",
            path="/handoff-cancellations",
            effect_field="cancellation",
            record_effects=_nothing,
            lookup_path="/handoff-cancellations/{key}",
            label="anulación de la preparación",
            cancels="handoff_key",
        ),
        Route(
            event_type=webhooks.NOTICE,
            destination=webhooks.DESTINATION,
            path="",  # the subscription's URL, whole
            effect_field=None,
            record_effects=_nothing,
            lookup_path=None,
            label="aviso",
        ),
    )
}
NAMES: tuple[str, ...] = tuple(DESTINATIONS)
LABELS: dict[str, str] = {d.name: d.label for d in DESTINATIONS.values()}
# The event that cancels each original at its destination (ADR-017).
CANCELLATION_OF = {"order.handoff_requested": "order.handoff_cancelled", "billing.intent_recorded": "billing.intent_cancelled"}


def route(event_type: str) -> Route:
    """The route of an event type (KeyError for an unknown one)."""
    return ROUTES[event_type]


def for_event(event_type: str) -> Destination:
    """The destination of an event type (KeyError for an unknown one)."""
    return DESTINATIONS[ROUTES[event_type].destination]
