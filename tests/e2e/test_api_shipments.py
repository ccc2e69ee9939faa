"""Shipments through the Orders API, on gunicorn and real Postgres (CONTRACT.md "Order lifecycle").

What left the warehouse consumes the order's firm reservation once per Idempotency-Key; every refusal
keeps nothing. Every answer is checked against the OpenAPI document; the books hold after each test.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from tests.e2e.api_support import Api, api_order, books_hold, new_key, post_all_at_once
from tests.integration.order_helpers import count, stock


def order_status(db, order_id) -> str:
    with db.reading() as conn:
        return conn.execute("SELECT status FROM orders WHERE id = %s", [order_id]).fetchone()["status"]


def test_shipments_consume_the_reservation_part_then_the_rest_and_the_order_shows_what_left(live_server, db):
    order = api_order(db, live_server, [("COR-200", 4), ("TOR-010", 100)])
    warehouse = Api(live_server, new_key(db, "sergio"))

    first = warehouse.ship(order["id"], [("cor-200", 1)])

    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    shipment = first.json()
    assert shipment["order_id"] == order["id"] and shipment["lines"] == [{"sku": "COR-200", "quantity": 1}]
    assert first.headers["Location"] == f"/api/v1/orders/{order['id']}/shipments/{shipment['id']}"
    assert warehouse.call("get", first.headers["Location"]).json() == shipment
    assert warehouse.call("get", f"/api/v1/orders/{uuid.uuid4()}/shipments/{shipment['id']}").status_code == 404
    assert stock(db, "COR-200") == {"on_hand": 499, "reserved": 3}
    now = Api(live_server, new_key(db, "vendedor1")).call("get", f"/api/v1/orders/{order['id']}").json()
    assert now["status"] == "DESPACHADO_PARCIAL"
    assert [(line["sku"], line["quantity"], line["dispatched"]) for line in now["lines"]] == [
        ("COR-200", 4, 1),
        ("TOR-010", 100, 0),
    ]
    books_hold(db)

    rest = warehouse.ship(order["id"], [("COR-200", 3), ("TOR-010", 100)])

    assert rest.status_code == 201
    assert stock(db, "COR-200") == {"on_hand": 496, "reserved": 0} and stock(db, "TOR-010") == {"on_hand": 9_900, "reserved": 0}
    now = Api(live_server, new_key(db, "vendedor1")).call("get", f"/api/v1/orders/{order['id']}").json()
    assert now["status"] == "DESPACHADO" and [line["dispatched"] for line in now["lines"]] == [4, 100]
    done = warehouse.ship(order["id"], [("COR-200", 1)])
    assert done.status_code == 409 and done.json()["reason"] == "order_not_dispatchable"
    books_hold(db)


def test_a_retried_shipment_is_the_same_one_and_its_key_with_another_body_is_422(live_server, db):
    order = api_order(db, live_server, [("COR-200", 4)])
    warehouse, key = Api(live_server, new_key(db, "sergio")), uuid.uuid4()
    first = warehouse.ship(order["id"], [("COR-200", 1)], key)
    again = warehouse.ship(order["id"], [("COR-200", 1)], key)
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json() and again.headers["Location"] == first.headers["Location"]
    other = warehouse.ship(order["id"], [("COR-200", 2)], key)
    assert other.status_code == 422 and other.json()["reason"] == "idempotency_key_reused"
    assert stock(db, "COR-200") == {"on_hand": 499, "reserved": 3}
    assert count(db, "SELECT count(*) FROM shipment") == 1
    books_hold(db)


def test_one_key_sent_by_eight_threads_at_once_makes_one_shipment(live_server, db):
    order = api_order(db, live_server, [("COR-200", 4)])
    key, api_key = uuid.uuid4(), new_key(db, "sergio")
    responses = post_all_at_once([lambda: Api(live_server, api_key).ship(order["id"], [("COR-200", 3)], key)] * 8)
    assert [r.status_code for r in responses] == [201] * 8
    assert len({r.json()["id"] for r in responses}) == 1
    assert sorted(r.headers.get("Idempotent-Replayed", "") for r in responses) == [""] + ["true"] * 7
    assert stock(db, "COR-200") == {"on_hand": 497, "reserved": 1}
    assert count(db, "SELECT count(*) FROM shipment") == 1
    books_hold(db)


def test_more_than_remains_is_422_exceeds_remaining_keeps_nothing_and_frees_the_key(live_server, db):
    order = api_order(db, live_server, [("COR-200", 2)])
    warehouse, key = Api(live_server, new_key(db, "sergio")), uuid.uuid4()
    over = warehouse.ship(order["id"], [("COR-200", 3)], key)
    assert over.status_code == 422 and over.json()["reason"] == "exceeds_remaining"
    assert over.json()["remaining"] == [{"sku": "COR-200", "quantity": 3, "remaining": 2}]
    assert stock(db, "COR-200") == {"on_hand": 500, "reserved": 2} and order_status(db, order["id"]) == "CONFIRMADO"
    assert count(db, "SELECT count(*) FROM shipment") == 0
    assert warehouse.ship(order["id"], [("COR-200", 2)], key).status_code == 201  # the refusal kept no key
    books_hold(db)


def test_orders_not_confirmed_are_409_order_not_dispatchable_and_unknown_ones_404(live_server, db):
    pending = api_order(db, live_server, [("CAB-045", 2)], client="Ferretería Platino SA")
    cancelled = api_order(db, live_server, [("COR-200", 1)])
    Api(live_server, new_key(db, "vendedor1")).cancel(cancelled["id"])
    warehouse = Api(live_server, new_key(db, "sergio"))
    for order, sku in ((pending, "CAB-045"), (cancelled, "COR-200")):
        refused = warehouse.ship(order["id"], [(sku, 1)])
        assert refused.status_code == 409 and refused.json()["reason"] == "order_not_dispatchable"
    assert warehouse.ship(uuid.uuid4(), [("COR-200", 1)]).status_code == 404
    assert stock(db, "CAB-045") == {"on_hand": 40, "reserved": 2} and count(db, "SELECT count(*) FROM shipment") == 0
    books_hold(db)


@pytest.mark.parametrize(
    "lines, field",
    [
        ([{"sku": "COR-200", "quantity": 0}], "lines[0].quantity"),
        ([{"sku": "COR-200", "quantity": -1}], "lines[0].quantity"),
        ([{"sku": "COR-200", "quantity": 10**9}], "lines[0].quantity"),
        ([{"sku": "COR-200", "quantity": 1.5}], "lines[0].quantity"),
        ([{"sku": "COR-200", "quantity": "1"}], "lines[0].quantity"),
        ([{"sku": "COR-200", "quantity": True}], "lines[0].quantity"),
        ([{"sku": "COR\x00200", "quantity": 1}], "lines[0].sku"),
        ([], "lines"),
        # Well formed, but not what this order can ship: still malformed input, 400 (CONTRACT.md).
        ([{"sku": "TOR-010", "quantity": 1}], "lines"),  # a SKU not in the order
        ([{"sku": "COR-200", "quantity": 1}, {"sku": "cor-200 ", "quantity": 1}], "lines"),  # a SKU twice
    ],
)
def test_a_malformed_shipment_is_400_naming_the_field_and_keeps_nothing(live_server, db, lines, field):
    order = api_order(db, live_server, [("COR-200", 2)])
    response = Api(live_server, new_key(db, "sergio")).call(
        "post", f"/api/v1/orders/{order['id']}/shipments", json={"lines": lines}, headers={"Idempotency-Key": str(uuid.uuid4())}
    )
    assert response.status_code == 400 and response.json()["reason"] == "invalid_request"
    assert field in response.json()["errors"], response.json()
    assert stock(db, "COR-200") == {"on_hand": 500, "reserved": 2} and count(db, "SELECT count(*) FROM shipment") == 0


def test_a_shipment_without_a_uuid_key_json_or_the_permission_is_refused(live_server, db):
    order = api_order(db, live_server, [("COR-200", 2)])
    path, body, key = (
        f"/api/v1/orders/{order['id']}/shipments",
        '{"lines": [{"sku": "COR-200", "quantity": 1}]}',
        new_key(db, "sergio"),
    )
    json_type, some_key = {"Content-Type": "application/json"}, {"Idempotency-Key": str(uuid.uuid4())}
    for headers, data, status, reason in (
        (json_type, body, 400, "idempotency_key_missing"),
        ({**json_type, "Idempotency-Key": "abc"}, body, 400, "invalid_request"),
        ({**some_key, "Content-Type": "text/plain"}, body, 415, "unsupported_media_type"),
        ({**some_key, **json_type}, "{lines", 400, "invalid_request"),
    ):
        response = Api(live_server, key).call("post", path, data=data, headers=headers)
        assert (response.status_code, response.json()["reason"]) == (status, reason), headers
    seller = Api(live_server, new_key(db, "vendedor1")).ship(order["id"], [("COR-200", 1)])
    assert seller.status_code == 403 and seller.json()["reason"] == "forbidden"
    assert stock(db, "COR-200") == {"on_hand": 500, "reserved": 2} and count(db, "SELECT count(*) FROM shipment") == 0


def test_a_shipment_waiting_over_two_seconds_for_its_order_is_503_keeps_nothing_and_may_be_sent_again(live_server, db, settings):
    order = api_order(db, live_server, [("COR-200", 2)])
    warehouse, key = Api(live_server, new_key(db, "sergio")), uuid.uuid4()
    with psycopg.connect(settings.database_url) as holder:  # a stuck writer holds the order row (ADR-015's bound)
        holder.execute("SELECT 1 FROM orders WHERE id = %s FOR UPDATE", [order["id"]])
        busy = warehouse.ship(order["id"], [("COR-200", 1)], key)
        holder.rollback()
    assert busy.status_code == 503 and busy.json()["reason"] == "unavailable" and busy.headers["Retry-After"] == "1"
    assert count(db, "SELECT count(*) FROM shipment") == 0
    assert warehouse.ship(order["id"], [("COR-200", 1)], key).status_code == 201
    books_hold(db)


def test_a_cancel_and_a_shipment_of_one_order_racing_one_wins_and_the_other_gets_its_409(live_server, db):
    cancel_key, ship_key = new_key(db, "vendedor1"), new_key(db, "sergio")
    for _ in range(5):
        order = api_order(db, live_server, [("COR-200", 2)])
        cancelled, shipped = post_all_at_once(
            [
                lambda order=order: Api(live_server, cancel_key).cancel(order["id"]),
                lambda order=order: Api(live_server, ship_key).ship(order["id"], [("COR-200", 2)]),
            ]
        )
        outcome = (cancelled.status_code, shipped.status_code)
        assert outcome in ((200, 409), (409, 201)), outcome
        loser = shipped if outcome == (200, 409) else cancelled
        assert loser.json()["reason"] in ("order_not_dispatchable", "order_not_cancellable")
        assert order_status(db, order["id"]) == ("ANULADO" if outcome == (200, 409) else "DESPACHADO")
    books_hold(db)
