"""The states of Nexo's rows, one StrEnum each, spelled as the database's CHECK constraints spell them.

A member is a str, so it goes to Postgres as a bound parameter and comes back as the same text (a query
that must match a partial index spells it with sql_constant instead); the values are the business's
Spanish names (STYLE.md, docs/architecture.md), except the dead-letter ones (ADR-010).
`tests/integration/test_schema.py` checks each enum against the CHECK constraint of its column.
"""

from __future__ import annotations

from enum import StrEnum


class OrderStatus(StrEnum):
    """orders.status."""

    CONFIRMADO = "CONFIRMADO"  # within the credit limit, or authorized by credit (RN-01, CU-02)
    PENDIENTE_AUTORIZACION = "PENDIENTE_AUTORIZACION"  # over the limit, waiting for the credit officer (RN-02)
    RECHAZADO = "RECHAZADO"  # refused by the credit officer (CU-02)
    ANULADO = "ANULADO"  # cancelled before anything left the warehouse (guarantee 19)
    DESPACHADO_PARCIAL = "DESPACHADO_PARCIAL"  # part of it left the warehouse
    DESPACHADO = "DESPACHADO"  # all of it left the warehouse


class BillingStatus(StrEnum):
    """orders.billing_status: where the invoice stands."""

    NO_APLICA = "NO_APLICA"  # nothing to invoice (not confirmed)
    PENDIENTE_FACTURACION = "PENDIENTE_FACTURACION"  # confirmed; the fiscal provider has not answered yet
    FACTURADO = "FACTURADO"  # the fiscal provider issued the invoice
    ANULADA = "ANULADA"  # the order was cancelled and the provider issued the invoice's credit note


class ReservationKind(StrEnum):
    """stock_reservation.kind (ADR-002)."""

    BLANDA = "BLANDA"  # held for an order waiting for credit; RN-07 (its deadline) is BLOCKED
    FIRME = "FIRME"  # held for a confirmed order


class EventStatus(StrEnum):
    """outbox_event.status (ADR-004)."""

    PENDIENTE = "PENDIENTE"
    ENTREGADO = "ENTREGADO"
    FALLIDO = "FALLIDO"
    RETIRADO = "RETIRADO"  # withdrawn with its order's cancel: the destination never saw it (ADR-017)


class AttemptOutcome(StrEnum):
    """delivery_attempt.outcome: how one try ended (ADR-008, ADR-014)."""

    ENTREGADO = "ENTREGADO"
    REINTENTO = "REINTENTO"  # a transient failure: PENDIENTE again after the backoff
    FALLIDO = "FALLIDO"  # a permanent failure, or the cycle's last attempt: the event's dead letter opens
    DESCARTADO_POR_LEASE = "DESCARTADO_POR_LEASE"  # our lease was taken over; the other claimant's outcome stands
    SIN_RESULTADO = "SIN_RESULTADO"  # the attempt ended (killed, unwritable) without an outcome
    RETIRADO = "RETIRADO"  # a cancellation whose original the destination never applied: nothing sent (ADR-017)


# An order is open while something can still happen to it (CONTRACT.md: cancel, dispatch).
OPEN_ORDER_STATUSES = (OrderStatus.CONFIRMADO, OrderStatus.PENDIENTE_AUTORIZACION, OrderStatus.DESPACHADO_PARCIAL)
# Cancellable while nothing has left the warehouse; dispatchable once confirmed, until all has left.
CANCELLABLE = (OrderStatus.CONFIRMADO, OrderStatus.PENDIENTE_AUTORIZACION)
DISPATCHABLE = (OrderStatus.CONFIRMADO, OrderStatus.DESPACHADO_PARCIAL)


class DeadLetterStatus(StrEnum):
    """dead_letter.status (ADR-010)."""

    PENDING = "pending"
    RESOLVED = "resolved"  # replayed: its event went back to PENDIENTE
    DISCARDED = "discarded"


class EmailStatus(StrEnum):
    """email_message.status: an email notification waiting, sent, or given up on (nexo/mail/)."""

    PENDIENTE = "PENDIENTE"
    ENVIADO = "ENVIADO"
    FALLIDO = "FALLIDO"  # every attempt spent: it stays for /ops


def sql_constant(*states: StrEnum) -> str:
    """States spelled as SQL constants, `'A'` or `'A', 'B'`, for a predicate that must match a partial index's.

    Everywhere else a state is a bound parameter. The planner uses a partial index only when it can prove
    the query's WHERE implies the index's predicate, and it proves that from constants alone: psycopg
    prepares a statement after its fifth run on a connection, and the generic plan of `status = %s`
    knows no value, so it could not use the index. The queries a partial index of the migrations serves
    spell their state with this, once, at import.
    """
    for state in states:
        if not state.value.replace("_", "").isalnum():  # never a quote or anything else to escape
            raise ValueError(f"not a state's spelling: {state.value!r}")
    return ", ".join(f"'{state.value}'" for state in states)
