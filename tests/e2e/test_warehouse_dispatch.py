"""Sergio's dispatch from /warehouse (guarantee 19): the orders to dispatch, POST /warehouse/orders/<id>/dispatch,
every refusal keeping nothing, and the last dispatches with their order's state."""

from __future__ import annotations

import re
import uuid

import pytest

from tests.e2e.lifecycle_support import (
    PLATINO,
    as_user,
    books_hold,
    cancel,
    dispatch,
    dispatch_form,
    enter,
    expired_csrf_token,
    page,
    received_by_warehouse,
    snapshot,
)
from tests.helpers import csrf_token
from tests.integration.order_helpers import count, stock


def confirmed_and_received(client, auth, db, lines, ticket="DEP-1") -> str:
    """A confirmed order the warehouse system accepted; Sergio is logged in afterwards."""
    order_id = enter(client, auth, lines)
    received_by_warehouse(db, order_id, ticket)
    as_user(client, auth, "sergio")
    return order_id


def status_of(db, order_id) -> str:
    with db.reading() as conn:
        return conn.execute("SELECT status FROM orders WHERE id = %s", [order_id]).fetchone()["status"]


def test_the_page_lists_received_orders_with_a_form_defaulting_to_what_remains(client, auth, db):
    order_id = confirmed_and_received(client, auth, db, [("COR-200", 4), ("TOR-010", 100)], ticket="DEP-77")
    on_the_way = enter(client, auth, [("COR-200", 1)])  # its handoff has not reached the warehouse yet
    as_user(client, auth, "sergio")
    html = page(client, "/warehouse")
    fields = dispatch_form(html, order_id)
    assert {fields["lines-0-sku"]: fields["lines-0-quantity"], fields["lines-1-sku"]: fields["lines-1-quantity"]} == {
        "COR-200": "4",
        "TOR-010": "100",
    }
    assert uuid.UUID(fields["dispatch_id"])
    assert "DEP-77" in html and 'data-to-dispatch="1"' in html and on_the_way not in html


def test_everything_that_remains_leaves_when_no_line_is_posted(client, auth, db):
    order_id = confirmed_and_received(client, auth, db, [("COR-200", 4), ("TOR-010", 100)])
    token = dispatch_form(page(client, "/warehouse"), order_id)["csrf_token"]

    response = client.post(f"/warehouse/orders/{order_id}/dispatch", data={"csrf_token": token})

    assert response.status_code == 303 and response.headers["Location"].endswith("/warehouse")
    assert status_of(db, order_id) == "DESPACHADO"
    assert stock(db, "COR-200") == {"on_hand": 496, "reserved": 0} and stock(db, "TOR-010") == {"on_hand": 9_900, "reserved": 0}
    html = page(client, "/warehouse")
    assert "Salió todo el pedido" in html and f'data-dispatch-order="{order_id}"' not in html
    books_hold(db)


def test_part_then_the_rest_from_the_form_and_the_last_dispatches_show_the_orders_state(client, auth, db):
    order_id = confirmed_and_received(client, auth, db, [("COR-200", 4), ("TOR-010", 100)])

    first = dispatch(client, order_id, {"COR-200": "1", "TOR-010": ""})  # TOR-010 does not leave now

    assert first.status_code == 303
    assert status_of(db, order_id) == "DESPACHADO_PARCIAL"
    assert stock(db, "COR-200") == {"on_hand": 499, "reserved": 3} and stock(db, "TOR-010") == {
        "on_hand": 10_000,
        "reserved": 100,
    }
    books_hold(db)
    html = page(client, "/warehouse")
    assert "Despacho registrado: 1 × COR-200. El pedido queda despachado en parte." in html
    fields = dispatch_form(html, order_id)  # still to dispatch, with what remains
    assert {fields["lines-0-sku"]: fields["lines-0-quantity"], fields["lines-1-sku"]: fields["lines-1-quantity"]} == {
        "COR-200": "3",
        "TOR-010": "100",
    }
    shipment = re.search(r'<tr data-shipment-id="[^"]+" data-shipment-order="' + order_id + r'">(.*?)</tr>', html, re.S).group(1)
    assert (
        'data-order-status="DESPACHADO_PARCIAL"' in shipment and "1 × COR-200" in shipment and "Despachado en parte" in shipment
    )

    rest = dispatch(client, order_id)
    assert rest.status_code == 303 and status_of(db, order_id) == "DESPACHADO"
    assert stock(db, "COR-200") == {"on_hand": 496, "reserved": 0}
    assert len(re.findall(r'data-shipment-order="' + order_id, page(client, "/warehouse"))) == 2
    books_hold(db)


def test_the_same_form_sent_twice_is_one_dispatch(client, auth, db):
    order_id = confirmed_and_received(client, auth, db, [("COR-200", 4)])
    fields = dispatch_form(page(client, "/warehouse"), order_id)
    fields["lines-0-quantity"] = "1"
    first = client.post(f"/warehouse/orders/{order_id}/dispatch", data=fields)
    again = client.post(f"/warehouse/orders/{order_id}/dispatch", data=fields)  # a double click, a lost answer
    assert (first.status_code, again.status_code) == (303, 303)
    assert "ya estaba registrado" in page(client, "/warehouse")
    assert count(db, "SELECT count(*) FROM shipment") == 1 and stock(db, "COR-200") == {"on_hand": 499, "reserved": 3}
    fields["lines-0-quantity"] = "2"  # the same drawn form, other quantities: not a second use of its key
    reused = client.post(f"/warehouse/orders/{order_id}/dispatch", data=fields)
    assert reused.status_code == 409 and 'data-reason="dispatch_form_reused"' in reused.get_data(as_text=True)
    assert count(db, "SELECT count(*) FROM shipment") == 1
    books_hold(db)


def test_more_than_remains_is_a_422_with_the_form_again_and_nothing_changed(client, auth, db):
    order_id = confirmed_and_received(client, auth, db, [("COR-200", 4), ("TOR-010", 100)])
    before = snapshot(db)
    response = dispatch(client, order_id, {"COR-200": "5", "TOR-010": "1"})
    html = response.get_data(as_text=True)
    assert response.status_code == 422
    assert 'data-reason="exceeds_remaining"' in html and 'data-line-error="COR-200"' in html and "Quedan 4" in html
    assert 'name="lines-0-quantity"' in html and 'value="5"' in html  # as typed, to correct it
    assert snapshot(db) == before


def test_a_pending_cancelled_or_fully_dispatched_order_is_409_not_dispatchable(client, auth, db):
    pending = enter(client, auth, [("CAB-045", 2)], client_name=PLATINO)
    cancelled = enter(client, auth, [("COR-200", 1)])
    assert cancel(client, cancelled).status_code == 303
    done = confirmed_and_received(client, auth, db, [("TOR-010", 5)])
    assert dispatch(client, done).status_code == 303
    before = snapshot(db)
    for order_id in (pending, cancelled, done):
        response = client.post(
            f"/warehouse/orders/{order_id}/dispatch",
            data={"csrf_token": _token(client), "lines-0-sku": "COR-200", "lines-0-quantity": "1"},
        )
        assert response.status_code == 409, order_id
        assert 'data-reason="order_not_dispatchable"' in response.get_data(as_text=True)
    assert snapshot(db) == before


def _token(client) -> str:
    return csrf_token(page(client, "/warehouse"))


@pytest.mark.parametrize(
    "quantities",
    [
        {"COR-200": "0"},
        {"COR-200": "-1"},
        {"COR-200": "1.5"},
        {"COR-200": "1,5"},
        {"COR-200": "dos"},
        {"COR-200": "١٢"},
        {"COR-200": "+3"},
        {"COR-200": "100001"},
        {"COR-200": "9" * 400},
        {"COR-200": "1\x00"},
        {"COR-200": "", "TOR-010": ""},  # nothing typed at all
    ],
)
def test_a_malformed_quantity_is_a_400_with_the_form_again_and_nothing_changed(client, auth, db, quantities):
    order_id = confirmed_and_received(client, auth, db, [("COR-200", 4), ("TOR-010", 100)])
    before = snapshot(db)
    response = dispatch(client, order_id, quantities)
    html = response.get_data(as_text=True)
    assert response.status_code == 400, html[:300]
    assert f'data-dispatch-order="{order_id}"' in html and 'data-field-error="lines"' in html
    assert snapshot(db) == before


@pytest.mark.parametrize("sku", ["CAB-045", "NOPE-1", "COR-200"])
def test_a_sku_not_in_the_order_or_twice_is_a_400_and_nothing_changed(client, auth, db, sku):
    order_id = confirmed_and_received(client, auth, db, [("COR-200", 4)])
    before = snapshot(db)
    fields = dispatch_form(page(client, "/warehouse"), order_id)
    fields.update({"lines-0-quantity": "1", "lines-1-sku": sku, "lines-1-quantity": "1"})
    response = client.post(f"/warehouse/orders/{order_id}/dispatch", data=fields)
    assert response.status_code == 400 and 'data-field-error="lines"' in response.get_data(as_text=True)
    assert snapshot(db) == before


def test_only_the_warehouse_dispatches_and_an_unknown_order_is_404(client, auth, db):
    order_id = confirmed_and_received(client, auth, db, [("COR-200", 4)])
    for who in ("vendedor1", "laura", "marta"):
        as_user(client, auth, who)
        token = _any_token(client)
        assert client.post(f"/warehouse/orders/{order_id}/dispatch", data={"csrf_token": token}).status_code == 403
    as_user(client, auth, "sergio")
    assert client.post(f"/warehouse/orders/{uuid.uuid4()}/dispatch", data={"csrf_token": _token(client)}).status_code == 404
    assert status_of(db, order_id) == "CONFIRMADO"


def _any_token(client) -> str:
    return csrf_token(client.get("/", follow_redirects=True).get_data(as_text=True))


def test_an_expired_csrf_token_is_a_400_and_nothing_changes(app, client, auth, db):
    order_id = confirmed_and_received(client, auth, db, [("COR-200", 4)])
    before = snapshot(db)
    fields = dispatch_form(page(client, "/warehouse"), order_id)
    fields["csrf_token"] = expired_csrf_token(app, client)
    assert client.post(f"/warehouse/orders/{order_id}/dispatch", data=fields).status_code == 400
    assert snapshot(db) == before
