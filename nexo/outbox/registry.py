"""The destinations of the outbox, in one list (issue 12): adding one is an entry here plus its fake.

Everything that varies per destination lives in its entry: the event it receives, where its base URL
is set, the path events are POSTed to, the field of its answer that carries the business effect and
what that effect writes on the order, its Spanish label, and how to ask it whether an Idempotency-Key
was already applied. The relay, the dead-letter pages, the key check and the operations page read
this list; none of them names a destination. (The database's CHECK constraints on
outbox_event.destination and dead_letter.destination list them too: a new one needs a migration.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nexo.settings import Settings

# Each writer takes a relay batch's (order id, effect) pairs and writes them in one statement; the relay
# has already locked those orders in id order, so two workers' batches never deadlock (ADR-008).


def _billed(conn, effects: list[tuple]) -> None:
    # The fiscal provider's effect on the order: billed, with its invoice number.
    conn.execute(
        "UPDATE orders o SET billing_status = 'FACTURADO', invoice_number = v.effect"
        " FROM unnest(%s::uuid[], %s::text[]) AS v(id, effect) WHERE o.id = v.id",
        [[order_id for order_id, _ in effects], [effect for _, effect in effects]],
    )


def _handed_off(conn, effects: list[tuple]) -> None:
    # The warehouse's effect on the order: the preparation ticket Sergio works from.
    conn.execute(
        "UPDATE orders o SET handoff_ticket = v.effect FROM unnest(%s::uuid[], %s::text[]) AS v(id, effect) WHERE o.id = v.id",
        [[order_id for order_id, _ in effects], [effect for _, effect in effects]],
    )


@dataclass(frozen=True)
class Destination:
    """One place the outbox delivers to (see the module docstring)."""

    name: str  # outbox_event.destination, dead_letter.destination
    event_type: str  # the one event type it receives (ADR-004)
    url_setting: str  # the Settings field with its base URL (FISCAL_URL → fiscal_url)
    path: str  # events are POSTed here, Idempotency-Key = event id
    effect_field: str  # the field of a 2xx answer that carries the effect
    record_effects: Callable[[object, list[tuple]], None]  # (conn, [(order id, effect)]): writes them on the orders
    label: str  # for people, in Spanish
    lookup_path: str  # GET: 200 when that key was applied, 404 when not

    def base_url(self, settings: Settings) -> str | None:
        """Its configured base URL, or None when the setting is empty."""
        return getattr(settings, self.url_setting)

    def url_variable(self) -> str:
        """The environment variable that sets its base URL (for messages to an operator)."""
        return self.url_setting.upper()

    def lookup_url(self, base_url: str, key: str) -> str:
        """Where to ask whether `key` was applied."""
        return base_url.rstrip("/") + self.lookup_path.format(key=key)


DESTINATIONS: dict[str, Destination] = {
    d.name: d
    for d in (
        Destination(
            name="fiscal",
            event_type="billing.intent_recorded",
            url_setting="fiscal_url",
            path="/invoices",
            effect_field="invoice_number",
            record_effects=_billed,
            label="Fiscal (facturación)",
            lookup_path="/invoices/{key}",
        ),
        Destination(
            name="warehouse",
            event_type="order.handoff_requested",
            url_setting="warehouse_url",
            path="/handoffs",
            effect_field="ticket",
            record_effects=_handed_off,
            label="Depósito (entregas)",
            lookup_path="/handoffs/{key}",
        ),
    )
}
NAMES: tuple[str, ...] = tuple(DESTINATIONS)
LABELS: dict[str, str] = {d.name: d.label for d in DESTINATIONS.values()}
_BY_EVENT_TYPE = {d.event_type: d for d in DESTINATIONS.values()}


def for_event(event_type: str) -> Destination:
    """The destination of an event type (KeyError for an unknown one)."""
    return _BY_EVENT_TYPE[event_type]
