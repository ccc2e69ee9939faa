"""Order numbers people can say (ADR-020): P-000123 from a sequence, on every page that names an order,
in the API's order JSON, in what the destinations receive, and found by what a person types."""

from __future__ import annotations

import re
import uuid

import pytest

from nexo.formatting import format_order_number, parse_order_number
from nexo.orders.service import create_order
from tests.e2e.api_support import api_order
from tests.integration.order_helpers import command
from tests.integration.test_credit_decisions import approve, pending_order


def number_of(db, order_id) -> int:
    with db.reading() as conn:
        return conn.execute("SELECT number FROM orders WHERE id = %s", [order_id]).fetchone()["number"]


def new_order(db, lines=(("COR-200", 1),), **kwargs) -> uuid.UUID:
    return create_order(db, command(db, list(lines), **kwargs)).order_id


@pytest.mark.parametrize(
    ("typed", "number"),
    [("P-000123", 123), ("p-123", 123), ("P123", 123), ("#123", 123), (" 000123 ", 123), ("123", 123), ("N° 7", 7)],
)
def test_what_people_type_reads_as_the_number(typed, number):
    assert parse_order_number(typed) == number


@pytest.mark.parametrize("typed", ["", "P-", "P-0", "0", "P-12a", "12.3", "-5", "P--1", "9" * 25, "١٢٣", "P-000123; DROP"])
def test_anything_else_is_not_a_number(typed):
    assert parse_order_number(typed) is None


def test_numbers_are_written_with_six_digits_at_least():
    assert format_order_number(123) == "P-000123"
    assert format_order_number(1_234_567) == "P-1234567"
    assert format_order_number(None) == "—"


def test_each_order_gets_the_next_number_and_a_refused_one_keeps_none(db):
    first = new_order(db)
    refused = create_order(db, command(db, [("COR-118", 5)]))  # more than the one unit there is
    assert refused.outcome == "rejected"
    second = new_order(db)
    assert number_of(db, second) > number_of(db, first)
    with db.reading() as conn:
        numbers = [r["number"] for r in conn.execute("SELECT number FROM orders ORDER BY created_at, id").fetchall()]
    assert len(numbers) == len(set(numbers)) == 2


def test_the_destinations_receive_the_number_with_the_order(db):
    order_id = new_order(db)
    with db.reading() as conn:
        payloads = [r["payload"] for r in conn.execute("SELECT payload FROM outbox_event WHERE aggregate_id = %s", [order_id])]
    assert len(payloads) == 2
    assert {p["order_number"] for p in payloads} == {format_order_number(number_of(db, order_id))}


def test_an_approved_order_carries_its_number_to_the_destinations_too(db):
    order_id = pending_order(db)
    assert approve(db, order_id).outcome == "approved"
    with db.reading() as conn:
        payloads = [r["payload"] for r in conn.execute("SELECT payload FROM outbox_event WHERE aggregate_id = %s", [order_id])]
    assert {p["order_number"] for p in payloads} == {format_order_number(number_of(db, order_id))}


def test_the_order_page_the_list_and_the_credit_queue_name_the_order_by_its_number(db, client, auth):
    mine = new_order(db)
    waiting = new_order(db, [("COR-200", 10)], client="Ferretería Platino SA")
    auth.login("vendedor1")
    said = format_order_number(number_of(db, mine))
    page = client.get(f"/orders/{mine}").get_data(as_text=True)
    assert f'data-order-number="{said}"' in page and f"<title>Pedido {said}" in page
    listed = client.get("/orders").get_data(as_text=True)
    assert f'data-order-number="{said}"' in listed
    auth.logout()
    auth.login("laura")
    queue = client.get("/credit/queue").get_data(as_text=True)
    assert format_order_number(number_of(db, waiting)) in queue
    assert not re.search(r"<code>[0-9a-f]{8}</code>", queue)  # no more UUID prefixes


def test_a_salesperson_finds_their_order_by_what_they_type(db, client, auth):
    order_id = new_order(db)
    number = number_of(db, order_id)
    auth.login("vendedor1")
    for typed in (format_order_number(number), str(number), f"p{number}"):
        found = client.get("/orders", query_string={"numero": typed})
        assert found.status_code == 303 and found.headers["Location"].endswith(f"/orders/{order_id}")


def test_another_salespersons_number_finds_nothing_and_says_so(db, client, auth):
    theirs = new_order(db, salesperson="vendedor2")
    auth.login("vendedor1")
    for typed in (format_order_number(number_of(db, theirs)), "P-999999"):
        answer = client.get("/orders", query_string={"numero": typed})
        assert answer.status_code == 404 and 'data-reason="order_not_found"' in answer.get_data(as_text=True)


def test_what_is_not_a_number_is_refused_with_how_to_write_one(db, client, auth):
    auth.login("vendedor1")
    for typed in ("no sé", "<script>", "P-0"):
        answer = client.get("/orders", query_string={"numero": typed})
        html = answer.get_data(as_text=True)
        assert answer.status_code == 400 and 'data-field="numero"' in html and "P-000123" in html
        assert "<script>" not in html.split("data-order-filters", 1)[1].split("</form>", 1)[0]


def test_the_api_order_json_has_the_number(live_server, db):
    created = api_order(db, live_server, [("TOR-010", 1)])
    assert re.fullmatch(r"P-[0-9]{6,}", created["number"])
    assert created["number"] == format_order_number(number_of(db, created["id"]))


def test_credit_and_the_owner_find_any_order_by_its_number(db, client, auth):
    theirs = new_order(db, salesperson="vendedor2")
    typed = format_order_number(number_of(db, theirs))
    for person in ("laura", "marta"):
        auth.login(person)
        found = client.get("/orders/all", query_string={"numero": typed})
        assert found.status_code == 303 and found.headers["Location"].endswith(f"/orders/{theirs}")
        missing = client.get("/orders/all", query_string={"numero": "P-999999"})
        assert missing.status_code == 404 and 'data-reason="order_not_found"' in missing.get_data(as_text=True)
        auth.logout()
