"""Pure pieces of the order-life pages: pesos as people type them, states in words, the dispatch form, the story's order."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from werkzeug.datastructures import MultiDict

from nexo.formatting import MoneyInputError, format_ars, parse_ars
from nexo.handoffs import queries as handoff_queries
from nexo.orders import timeline
from nexo.orders.dispatch import ShipLine
from nexo.orders.forms import read_dispatch
from nexo.orders.warehouse_queries import WAITING
from nexo.states import DISPATCHABLE, BillingStatus, OrderStatus
from nexo.vocabulary import BILLING_STATUS as BILLING_STATUS_WORDS
from nexo.vocabulary import ORDER_STATUS as ORDER_STATUS_WORDS


@pytest.mark.parametrize(
    ("text", "cents"),
    [
        ("1234,56", 123_456),
        ("1.234,56", 123_456),
        ("1.234.567,89", 123_456_789),
        ("1.234", 123_400),
        ("1234", 123_400),
        ("0", 0),
        ("0,5", 50),
        ("0,05", 5),
        ("$ 50", 5_000),
        ("$50,10", 5_010),
        ("  12,30\t", 1_230),
        ("007", 700),
    ],
)
def test_pesos_as_people_write_them(text, cents):
    assert parse_ars(text) == cents


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "Escribí un importe"),
        ("$", "Escribí un importe"),
        ("-5", "negativo"),
        ("−5", "negativo"),
        ("12,345", "dos decimales"),
        ("1,234", "dos decimales"),
        ("1,234.56", "coma para los centavos"),
        ("1234.56", "coma para los centavos"),
        ("1.23", "coma para los centavos"),
        ("1.2345", "coma para los centavos"),
        ("1 234", "coma para los centavos"),
        ("12,", "coma para los centavos"),
        (",5", "coma para los centavos"),
        ("+5", "coma para los centavos"),
        ("1e3", "coma para los centavos"),
        ("١٢", "coma para los centavos"),
        ("１２", "coma para los centavos"),
        ("USD 5", "coma para los centavos"),
        ("9" * 17, "demasiado grande"),
        ("9" * 5000, "demasiado grande"),
    ],
)
def test_anything_else_is_refused_with_a_reason(text, why):
    with pytest.raises(MoneyInputError, match=why):
        parse_ars(text)


@pytest.mark.parametrize("cents", [0, 5, 50, 123_456, 100_000_000, 10**15])
def test_what_the_pages_show_reads_back_as_the_same_amount(cents):
    assert parse_ars(format_ars(cents)) == cents


def test_every_state_has_its_words_and_no_words_are_a_code():
    assert set(ORDER_STATUS_WORDS) == set(OrderStatus) and set(BILLING_STATUS_WORDS) == set(BillingStatus)
    assert not set(ORDER_STATUS_WORDS.values()) & set(OrderStatus)
    assert not set(BILLING_STATUS_WORDS.values()) & set(BillingStatus)


def test_the_warehouse_list_spells_the_dispatchable_states_as_the_use_case_does():
    spelled = "status IN (" + ", ".join(f"'{s}'" for s in DISPATCHABLE) + ")"
    assert spelled == WAITING
    assert handoff_queries.TO_PREPARE.startswith(spelled + " AND ")


# --- the dispatch form --------------------------------------------------------------------------------


def test_no_line_posted_means_everything_that_remains():
    typed = read_dispatch(MultiDict({"csrf_token": "t", "dispatch_id": str(uuid.uuid4())}))
    assert (typed.lines, typed.error) == (None, None)


def test_an_empty_line_does_not_leave_now():
    typed = read_dispatch(
        MultiDict({"lines-0-sku": "COR-200", "lines-0-quantity": " 3 ", "lines-1-sku": "TOR-010", "lines-1-quantity": ""})
    )
    assert typed.lines == (ShipLine("COR-200", 3),) and typed.error is None


@pytest.mark.parametrize("quantity", ["0", "-1", "1.5", "x", "١", "100001", "9" * 300, "1\x00", "+1"])
def test_a_malformed_quantity_marks_its_line(quantity):
    typed = read_dispatch(MultiDict({"lines-0-sku": "COR-200", "lines-0-quantity": quantity}))
    assert typed.lines is None and typed.error and typed.rows[0].error


def test_lines_that_all_stay_are_refused_not_read_as_everything():
    typed = read_dispatch(MultiDict({"lines-0-sku": "COR-200", "lines-0-quantity": ""}))
    assert typed.lines is None and "al menos una línea" in (typed.error or "")


# --- the order's story -------------------------------------------------------------------------------

T0 = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)


def _order(**overrides) -> dict:
    order = {
        "created_at": T0, "api_key_id": None, "api_key_name": None, "salesperson_name": "Vendedor A",
        "decided_at": None, "decided_by_name": None, "decision_note": None, "charged_cents": 100, "status": "ANULADO",
        "cancelled_at": T0 + timedelta(minutes=5), "cancelled_by_name": "Laura", "cancel_reason": "duplicado",
        "invoice_number": "F-1", "handoff_ticket": "T-1", "credit_note_number": None,
    }  # fmt: skip
    return {**order, **overrides}


def _event(event_type: str, status: str, at: datetime, depends_on=None) -> dict:
    return {
        "event_type": event_type,
        "status": status,
        "delivered_at": at if status == "ENTREGADO" else None,
        "withdrawn_at": at if status == "RETIRADO" else None,
        "dead_letter_at": at if status == "FALLIDO" else None,
        "depends_on": depends_on,
    }


def test_the_story_is_in_time_order_and_a_cancel_comes_before_what_it_withdrew():
    cancel_at = T0 + timedelta(minutes=5)
    events = [
        _event("order.handoff_requested", "ENTREGADO", T0 + timedelta(seconds=1)),
        _event("billing.intent_recorded", "RETIRADO", cancel_at),  # withdrawn in the cancel's own transaction
        _event("order.handoff_cancelled", "ENTREGADO", cancel_at + timedelta(seconds=1), depends_on=uuid.uuid4()),
    ]
    audit = [{"action": "order.cancelled", "details": {"released": [{"sku": "COR-200", "quantity": 3}], "given_back_cents": 100}}]
    steps = timeline.build(_order(), events, [], audit)
    assert [s.kind for s in steps] == ["created", "credit_within_limit", "delivered", "cancelled", "withdrawn", "delivered"]
    assert "orden de preparación T-1" in steps[2].text
    assert "«duplicado»" in steps[3].text and "3 × COR-200" in steps[3].text and "$ 1,00" in steps[3].text
    assert "no llegó a enviarse" in steps[4].text


def test_an_order_that_waited_shows_the_wait_and_the_decision():
    decided = T0 + timedelta(hours=1)
    order = _order(decided_at=decided, decided_by_name="Laura", decision_note="cliente de siempre", status="CONFIRMADO",
                   cancelled_at=None, api_key_id=7, api_key_name="tienda-web")  # fmt: skip
    shipments = [{"created_at": decided + timedelta(hours=1), "api_key_name": None, "created_by_name": "Sergio",
                  "lines": [{"sku": "COR-200", "quantity": 1}, {"sku": "TOR-010", "quantity": 2}]}]  # fmt: skip
    steps = timeline.build(order, [], shipments, [])
    assert [s.kind for s in steps] == ["created", "credit_pending", "credit_approved", "dispatched"]
    assert "«tienda-web»" in steps[0].text and "«cliente de siempre»" in steps[2].text
    assert "1 × COR-200 y 2 × TOR-010" in steps[3].text and "Sergio" in steps[3].text
