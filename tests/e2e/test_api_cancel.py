"""Cancelling an order through the Orders API, on gunicorn and real Postgres (CONTRACT.md "Order lifecycle").

Every answer is checked against the OpenAPI document (api_support.Api); the books (nexo.books) hold
after each test's effects.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from nexo import create_app
from nexo.credit.service import RejectOrder, reject_order
from nexo.telemetry.recorder import recorder
from tests.e2e.api_support import Api, api_order, books_hold, new_key, order_body
from tests.integration.order_helpers import count, exposure, stock, user_id
from tests.relay_support import wait_until

SUR = "Corralón del Sur"


def order_row(db, order_id) -> dict:
    with db.reading() as conn:
        return conn.execute("SELECT status, charged_cents FROM orders WHERE id = %s", [order_id]).fetchone()


def test_the_salesperson_cancels_an_order_stock_and_credit_come_back_once_and_the_audit_names_the_key(live_server, db):
    before = exposure(db, SUR)
    key = new_key(db, "vendedor1", name="tienda-web")
    api = Api(live_server, key)
    order = api.post_order(order_body(db, [("COR-200", 3), ("TOR-010", 10)]), uuid.uuid4()).json()
    assert stock(db, "COR-200")["reserved"] == 3 and exposure(db, SUR) == before + order["total_cents"]

    cancelled = api.cancel(order["id"], reason="  el cliente llamó para anularlo ")

    assert cancelled.status_code == 200
    body = cancelled.json()
    assert body["id"] == order["id"] and body["status"] == "ANULADO" and body["billing_status"] == "NO_APLICA"
    # Neither event had left: both withdrawn with the cancel (ADR-017), listed with that status.
    assert sorted((e["type"], e["status"]) for e in body["events"]) == [
        ("billing.intent_recorded", "RETIRADO"),
        ("order.handoff_requested", "RETIRADO"),
    ]
    assert stock(db, "COR-200") == {"on_hand": 500, "reserved": 0} and stock(db, "TOR-010")["reserved"] == 0
    assert exposure(db, SUR) == before
    with db.reading() as conn:
        audit = conn.execute(
            "SELECT actor, details FROM audit_log WHERE action = 'order.cancelled' AND object_id = %s", [order["id"]]
        ).fetchall()
        key_id = conn.execute("SELECT id FROM api_key WHERE name = 'tienda-web'").fetchone()["id"]
    assert [(a["actor"], a["details"]["api_key_id"], a["details"]["reason"]) for a in audit] == [
        ("vendedor1", key_id, "el cliente llamó para anularlo")
    ]
    books_hold(db)

    again = api.cancel(order["id"], reason="otra vez")  # a retried cancel: same answer, nothing released twice
    assert again.status_code == 200 and again.json() == body
    assert stock(db, "COR-200") == {"on_hand": 500, "reserved": 0} and exposure(db, SUR) == before
    assert count(db, "SELECT count(*) FROM audit_log WHERE action = 'order.cancelled'") == 1
    books_hold(db)


def test_a_cancel_after_delivery_lists_the_cancellations_and_rings_the_relay(live_server, db, settings, redis_client):
    order = api_order(db, live_server, [("COR-200", 1)])
    with db.transaction() as tx:  # as the relay records the deliveries (the relay itself is tested apart)
        tx.execute(
            "UPDATE outbox_event SET status = 'ENTREGADO', attempts = 1, delivered_at = now() WHERE aggregate_id = %s",
            [order["id"]],
        )
        tx.commit()
    queue = f"rq:queue:{settings.relay_queue}"
    # The web tier rings Redis from a thread after the answer (nexo/outbox/wakeup.py): wait for the order's
    # own ring, then drop it, so the one left is the cancel's.
    wait_until(lambda: redis_client.llen(queue) == 1, timeout=10, message="the order's own wake-up")
    redis_client.flushdb()
    body = Api(live_server, new_key(db, "vendedor1")).cancel(order["id"]).json()
    assert [(e["type"], e["status"]) for e in body["events"]] == [
        ("billing.intent_recorded", "ENTREGADO"),
        ("order.handoff_requested", "ENTREGADO"),
        ("billing.intent_cancelled", "PENDIENTE"),
        ("order.handoff_cancelled", "PENDIENTE"),
    ]
    # Woken after the commit (ADR-004), once for its two cancellations (ADR-008).
    wait_until(lambda: redis_client.llen(queue) >= 1, timeout=10, message="the cancel's wake-up")
    assert redis_client.llen(queue) == 1
    books_hold(db)


def test_credit_may_cancel_any_order_another_salesperson_gets_404_and_the_warehouse_403(live_server, db):
    order = api_order(db, live_server, [("COR-200", 2)])
    stranger = Api(live_server, new_key(db, "vendedor2")).cancel(order["id"])
    assert stranger.status_code == 404 and stranger.json()["reason"] == "not_found"
    unknown = Api(live_server, new_key(db, "vendedor1")).cancel(uuid.uuid4())
    assert unknown.status_code == 404
    warehouse = Api(live_server, new_key(db, "sergio")).cancel(order["id"])
    assert warehouse.status_code == 403 and warehouse.json()["reason"] == "forbidden"
    assert order_row(db, order["id"])["status"] == "CONFIRMADO" and stock(db, "COR-200")["reserved"] == 2
    assert Api(live_server, new_key(db, "laura")).cancel(order["id"]).json()["status"] == "ANULADO"
    assert stock(db, "COR-200")["reserved"] == 0
    books_hold(db)


def test_a_pending_order_is_cancelled_releasing_its_soft_reservation_and_giving_back_nothing(live_server, db):
    platino = "Ferretería Platino SA"
    before = exposure(db, platino)
    order = api_order(db, live_server, [("CAB-045", 2)], client=platino)
    assert order["status"] == "PENDIENTE_AUTORIZACION"
    body = Api(live_server, new_key(db, "vendedor1")).cancel(order["id"]).json()
    assert body["status"] == "ANULADO" and body["events"] == []
    assert stock(db, "CAB-045")["reserved"] == 0 and exposure(db, platino) == before
    books_hold(db)


def test_rejected_and_dispatched_orders_are_409_order_not_cancellable_and_nothing_changes(live_server, db):
    rejected = api_order(db, live_server, [("CAB-045", 2)], client="Ferretería Platino SA")
    reject_order(db, RejectOrder(uuid.UUID(rejected["id"]), user_id(db, "laura"), "laura", "sin crédito"))
    shipped = api_order(db, live_server, [("COR-200", 2)])
    assert Api(live_server, new_key(db, "sergio")).ship(shipped["id"], [("COR-200", 1)]).status_code == 201
    api = Api(live_server, new_key(db, "laura"))
    for order, status in ((rejected, "RECHAZADO"), (shipped, "DESPACHADO_PARCIAL")):
        refused = api.cancel(order["id"])
        assert refused.status_code == 409 and refused.json()["reason"] == "order_not_cancellable"
        assert status in refused.json()["detail"] and order_row(db, order["id"])["status"] == status
    assert stock(db, "COR-200") == {"on_hand": 499, "reserved": 1}
    assert count(db, "SELECT count(*) FROM audit_log WHERE action = 'order.cancelled'") == 0
    books_hold(db)


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "reason"),
        ({"reason": ""}, "reason"),
        ({"reason": "   "}, "reason"),
        ({"reason": "anulado\x00"}, "reason"),
        ({"reason": "línea\nnueva"}, "reason"),
        ({"reason": "x" * 501}, "reason"),
        ({"reason": 5}, "reason"),
        ({"reason": "ok", "refund": True}, "refund"),
    ],
)
def test_a_cancel_without_a_usable_reason_is_400_and_changes_nothing(live_server, db, body, field):
    order = api_order(db, live_server, [("COR-200", 1)])
    response = Api(live_server, new_key(db, "vendedor1")).call("post", f"/api/v1/orders/{order['id']}/cancel", json=body)
    assert response.status_code == 400 and response.json()["reason"] == "invalid_request"
    assert field in response.json()["errors"], response.json()
    assert order_row(db, order["id"])["status"] == "CONFIRMADO" and stock(db, "COR-200")["reserved"] == 1


def test_a_cancel_that_is_not_json_is_refused(live_server, db):
    order = api_order(db, live_server, [("COR-200", 1)])
    path, key = f"/api/v1/orders/{order['id']}/cancel", new_key(db, "vendedor1")
    plain = Api(live_server, key).call("post", path, data='{"reason": "x"}', headers={"Content-Type": "text/plain"})
    assert (plain.status_code, plain.json()["reason"]) == (415, "unsupported_media_type")
    broken = Api(live_server, key).call("post", path, data="{reason", headers={"Content-Type": "application/json"})
    assert (broken.status_code, broken.json()["reason"]) == (400, "invalid_request")
    assert order_row(db, order["id"])["status"] == "CONFIRMADO"


def test_with_the_database_down_the_new_writes_answer_503_problem_json(settings):
    down = dataclasses.replace(settings, database_url="postgresql://postgres@127.0.0.1:1/nowhere", db_pool_timeout_s=0.5)
    app = create_app(down, test_config={"TESTING": True})
    recorder.configure(settings.database_url)  # create_app pointed this process's ops recorder at it
    client, some = app.test_client(), uuid.uuid4()
    headers = {"Authorization": "Bearer nexo_" + "y" * 43, "Idempotency-Key": str(uuid.uuid4())}
    for path, body in (
        (f"/api/v1/orders/{some}/cancel", {"reason": "x"}),
        (f"/api/v1/orders/{some}/shipments", {"lines": [{"sku": "COR-200", "quantity": 1}]}),
        (f"/api/v1/clients/{some}/payments", {"amount_cents": 1, "reference": "r"}),
    ):
        response = client.post(path, json=body, headers=headers)
        assert response.status_code == 503 and response.content_type == "application/problem+json", path
        assert response.json["reason"] == "unavailable" and response.headers["Retry-After"]
    app.extensions["nexo.db"].close()
