"""An order's story in time order, for its page: built from the rows that already exist, never a second log.

The order row says who entered it and how (form or API key), the credit decision and the cancel; the
outbox events say what reached each destination, when, and what was withdrawn (ADR-017); the shipments
say what left the warehouse; the cancel's audit row says what it released and gave back. A step has
its moment, a code for tests (`data-timeline-kind`) and a sentence in Spanish for people.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nexo.formatting import format_ars
from nexo.outbox.registry import DESTINATIONS, ROUTES
from nexo.states import EventStatus, OrderStatus

Row = dict[str, Any]

# What a delivered event left on the order (the registry's effect writers put it there).
EFFECT_ON_ORDER = {
    "billing.intent_recorded": "invoice_number",
    "order.handoff_requested": "handoff_ticket",
    "billing.intent_cancelled": "credit_note_number",
}
# Steps of one transaction share its moment: cause before consequence (a cancel before what it withdrew).
_RANK = {
    "created": 0,
    "credit_within_limit": 1,
    "credit_pending": 1,
    "credit_approved": 2,
    "credit_rejected": 2,
    "dispatched": 3,
    "cancelled": 4,
    "delivered": 5,
    "withdrawn": 6,
    "failed": 7,
}


@dataclass(frozen=True)
class Step:
    """One moment of the order's life."""

    at: datetime
    kind: str
    text: str


def build(order: Row, events: list[Row], shipments: list[Row], audit: list[Row]) -> list[Step]:
    """The order's steps, oldest first (see the module docstring)."""
    steps = [_created(order), *_credit(order), *_dispatches(shipments), *_events(order, events)]
    if order["cancelled_at"] is not None:
        steps.append(_cancelled(order, audit))
    return sorted(steps, key=lambda step: (step.at, _RANK[step.kind]))


def _created(order: Row) -> Step:
    origin = f"por la API con la clave «{order['api_key_name']}»" if order["api_key_id"] else "desde el formulario web"
    return Step(order["created_at"], "created", f"Cargado por {order['salesperson_name']} {origin}.")


def _credit(order: Row) -> list[Step]:
    if order["decided_at"] is None and order["charged_cents"] > 0:
        return [
            Step(order["created_at"], "credit_within_limit", "Dentro del crédito disponible del cliente: confirmado al cargarlo.")
        ]
    steps = [
        Step(order["created_at"], "credit_pending", "Superaba el crédito disponible del cliente: quedó esperando a Crédito.")
    ]
    if order["decided_at"] is not None:
        who = order["decided_by_name"] or "Crédito"
        note = f": «{order['decision_note']}»" if order["decision_note"] else ""
        if order["status"] == OrderStatus.RECHAZADO:
            steps.append(Step(order["decided_at"], "credit_rejected", f"{who} lo rechazó{note}."))
        else:
            steps.append(Step(order["decided_at"], "credit_approved", f"{who} autorizó el crédito{note}."))
    return steps


def _dispatches(shipments: list[Row]) -> list[Step]:
    steps = []
    for shipment in shipments:
        who = (
            f"lo informó la API con la clave «{shipment['api_key_name']}»"
            if shipment["api_key_name"]
            else f"lo registró {shipment['created_by_name']}"
        )
        steps.append(Step(shipment["created_at"], "dispatched", f"Salió del depósito: {_units(shipment['lines'])}; {who}."))
    return steps


def _events(order: Row, events: list[Row]) -> list[Step]:
    steps = []
    for event in events:
        route = ROUTES[event["event_type"]]
        where = DESTINATIONS[route.destination].label
        if event["status"] == EventStatus.ENTREGADO and event["delivered_at"] is not None:
            number = order.get(EFFECT_ON_ORDER.get(event["event_type"], ""), None)
            what = f"{route.label} {number}" if number else route.label
            steps.append(Step(event["delivered_at"], "delivered", f"Entregado a {where}: {what}."))
        elif event["status"] == EventStatus.RETIRADO and event["withdrawn_at"] is not None:
            why = (
                "no hizo falta enviarla: el destino nunca había recibido el original"
                if event["depends_on"]
                else "no llegó a enviarse (se retiró al anular el pedido)"
            )
            steps.append(Step(event["withdrawn_at"], "withdrawn", f"{route.label.capitalize()} para {where}: {why}."))
        elif event["status"] == EventStatus.FALLIDO and event["dead_letter_at"] is not None:
            text = f"{route.label.capitalize()} para {where}: no se pudo entregar; Operaciones lo revisa en «Entregas fallidas»."
            steps.append(Step(event["dead_letter_at"], "failed", text))
    return steps


def _cancelled(order: Row, audit: list[Row]) -> Step:
    text = f"Anulado por {order['cancelled_by_name']}: «{order['cancel_reason']}»."
    details = next((a["details"] for a in reversed(audit) if a["action"] == "order.cancelled"), None) or {}
    if details.get("released"):
        text += f" Se liberó la reserva de {_units(details['released'])}."
    if details.get("given_back_cents"):
        text += f" Se devolvieron {format_ars(details['given_back_cents'])} al crédito del cliente."
    return Step(order["cancelled_at"], "cancelled", text)


def _units(lines: list[Row]) -> str:
    """'3 × COR-200 y 10 × TOR-010'."""
    parts = [f"{line['quantity']} × {line['sku']}" for line in lines]
    return " y ".join(parts) if len(parts) < 3 else ", ".join(parts[:-1]) + " y " + parts[-1]
