"""Orders API through gunicorn on real Postgres: the form's guarantees for integrations (guarantee 18, ADR-015)."""

from __future__ import annotations

import re
import socket
import time
import uuid
from urllib.parse import urlsplit

import psycopg
import requests

from tests.e2e.api_support import Api, new_key, order_body, post_all_at_once
from tests.e2e.order_forms import form_data, order_id_from
from tests.helpers import http_login
from tests.integration.order_helpers import count, stock
from tests.relay_support import wait_until

PLATINO = "Ferretería Platino SA"


def test_twenty_simultaneous_posts_with_one_key_make_one_order_and_all_get_it(live_server, db):
    key, body, api_key = uuid.uuid4(), order_body(db, [("CAB-045", 40)]), new_key(db)
    responses = post_all_at_once([lambda: Api(live_server, api_key).post_order(body, key)] * 20)
    assert [r.status_code for r in responses] == [201] * 20
    assert len({r.json()["id"] for r in responses}) == 1
    assert sorted(r.headers.get("Idempotent-Replayed", "") for r in responses) == [""] + ["true"] * 19
    assert count(db, "SELECT count(*) FROM orders") == 1
    assert stock(db, "CAB-045") == {"on_hand": 40, "reserved": 40}


def test_a_retry_after_a_dropped_response_replays_the_order_without_a_second_effect(live_server, db):
    # The 10:40 incident for a program: the request reaches Nexo, the answer never reaches the client.
    api_key, key = new_key(db), uuid.uuid4()
    body = order_body(db, [("CAB-045", 40)])
    raw = requests.Request(
        "POST",
        live_server + "/api/v1/orders",
        json=body,
        headers={"Authorization": f"Bearer {api_key}", "Idempotency-Key": str(key)},
    ).prepare()
    where = urlsplit(live_server)
    with socket.create_connection((where.hostname, where.port), timeout=5) as conn:
        head = "".join(f"{k}: {v}\r\n" for k, v in raw.headers.items())
        conn.sendall(f"POST /api/v1/orders HTTP/1.1\r\nHost: {where.netloc}\r\n{head}\r\n".encode() + raw.body)
    deadline = time.monotonic() + 10  # the client hung up; the server still finishes the order
    while count(db, "SELECT count(*) FROM orders") == 0:
        assert time.monotonic() < deadline, "the dropped request never created its order"
        time.sleep(0.05)
    retry = Api(live_server, api_key).post_order(body, key)
    assert retry.status_code == 201 and retry.headers["Idempotent-Replayed"] == "true"
    assert retry.headers["Location"] == f"/api/v1/orders/{retry.json()['id']}"
    assert retry.json()["status"] == "CONFIRMADO" and retry.json()["lines"] == [
        {"sku": "CAB-045", "quantity": 40, "unit_price_cents": 890000, "dispatched": 0}
    ]
    assert count(db, "SELECT count(*) FROM orders") == 1
    assert stock(db, "CAB-045") == {"on_hand": 40, "reserved": 40}


def test_the_same_key_with_another_intent_is_422_and_changes_nothing(live_server, db):
    api, key = Api(live_server, new_key(db)), uuid.uuid4()
    first = api.post_order(order_body(db, [("COR-200", 2)]), key)
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    other = api.post_order(order_body(db, [("COR-200", 3)]), key)
    assert other.status_code == 422 and other.json()["reason"] == "idempotency_key_reused"
    assert other.headers["Content-Type"] == "application/problem+json"
    assert count(db, "SELECT count(*) FROM orders") == 1
    assert stock(db, "COR-200")["reserved"] == 2


def test_the_last_cor118_raced_by_ten_api_clients_and_ten_forms_has_one_winner(live_server, db):
    names = [f"Cliente carrera {i:02d}" for i in range(20)]  # own clients: only the stock row is shared
    with db.transaction() as tx:
        for name in names:
            tx.execute("INSERT INTO client (name, tier, credit_limit_cents) VALUES (%s, 'REGULAR', 1000000000)", [name])
        tx.commit()
    api_key, session = new_key(db), http_login(live_server, "vendedor2")
    html = session.get(live_server + "/orders/new", timeout=10).text
    calls = []
    for name in names[:10]:
        body = order_body(db, [("COR-118", 1)], client=name)
        calls.append(lambda body=body: Api(live_server, api_key).post_order(body, uuid.uuid4()))
    for name in names[10:]:
        data = form_data(html, name, [("COR-118", 1)], request_id=str(uuid.uuid4()))

        def form_post(data=data):
            own = requests.Session()
            own.cookies.update(session.cookies)
            return own.post(live_server + "/orders/new", data=data, allow_redirects=False, timeout=60)

        calls.append(form_post)
    responses = post_all_at_once(calls)
    winners = [r for r in responses if r.status_code in (201, 303)]
    assert len(winners) == 1, [r.status_code for r in responses]
    for response in responses[:10]:
        if response.status_code != 201:
            assert response.status_code == 422 and response.json()["reason"] == "insufficient_stock"
    for response in responses[10:]:
        if response.status_code != 303:
            assert response.status_code == 422
            assert re.findall(r'data-reason="(\w+)"', response.text) == ["insufficient_stock"]
    assert stock(db, "COR-118") == {"on_hand": 1, "reserved": 1}
    assert count(db, "SELECT count(*) FROM orders") == 1


def test_an_order_over_the_credit_limit_is_pending_and_waits_in_lauras_queue(live_server, db):
    response = Api(live_server, new_key(db)).post_order(order_body(db, [("COR-200", 5)], client=PLATINO), uuid.uuid4())
    assert response.status_code == 201
    order = response.json()
    assert order["status"] == "PENDIENTE_AUTORIZACION" and order["events"] == []
    assert order["total_cents"] == 5 * 320000
    queue = http_login(live_server, "laura").get(live_server + "/credit/queue", timeout=10).text
    assert f'data-order-id="{order["id"]}"' in queue


def test_a_business_rejection_keeps_nothing_and_the_same_key_is_evaluated_again(live_server, db):
    api, key = Api(live_server, new_key(db)), uuid.uuid4()
    body = order_body(db, [("CAB-045", 41)])
    refused = api.post_order(body, key)
    assert refused.status_code == 422 and refused.json()["reason"] == "insufficient_stock"
    assert refused.json()["problems"] == [{"sku": "CAB-045", "reason": "insufficient_stock"}]
    assert count(db, "SELECT count(*) FROM idempotency_keys") == 0
    with db.transaction() as tx:  # stock arrives; the same retry now succeeds
        tx.execute(
            "UPDATE stock_level SET on_hand = 41 FROM product p"
            " WHERE p.id = stock_level.product_id AND p.sku = 'CAB-045' AND warehouse_id = 'CEN'"
        )
        tx.commit()
    again = api.post_order(body, key)
    assert again.status_code == 201 and "Idempotent-Replayed" not in again.headers
    for lines, reason in (([("NOPE-1", 1)], "invalid_sku"), ([("PRC-000", 1)], "price_source_unavailable")):
        response = api.post_order(order_body(db, lines), uuid.uuid4())
        assert (response.status_code, response.json()["reason"]) == (422, reason)


def test_a_key_still_held_by_a_running_request_is_409_with_retry_after(live_server, db, settings):
    key, api = uuid.uuid4(), Api(live_server, new_key(db))
    # Another request with this key is mid-transaction: it claimed the key and has not committed.
    with psycopg.connect(settings.database_url) as held:
        held.execute("INSERT INTO idempotency_keys (request_id, request_hash) VALUES (%s, 'x')", [key])
        started = time.monotonic()
        busy = api.post_order(order_body(db, [("COR-200", 1)]), key)
        waited = time.monotonic() - started
        held.rollback()
    assert busy.status_code == 409 and busy.json()["reason"] == "request_in_progress"
    assert busy.headers["Retry-After"] == "1" and 1.5 < waited < 10
    retry = api.post_order(order_body(db, [("COR-200", 1)]), key)
    assert retry.status_code == 201


def test_the_form_and_the_api_share_one_key_space_and_the_order_page_names_its_origin(live_server, db):
    session = http_login(live_server, "vendedor1")
    html = session.get(live_server + "/orders/new", timeout=10).text
    data = form_data(html, "Corralón del Sur", [("COR-200", 2)])
    form_order = order_id_from(
        session.post(live_server + "/orders/new", data=data, allow_redirects=False, timeout=10).headers["Location"]
    )
    body = order_body(db, [("COR-200", 2)])
    same = Api(live_server, new_key(db, "vendedor1")).post_order(body, data["request_id"])
    assert same.status_code == 201 and same.headers["Idempotent-Replayed"] == "true"
    assert same.json()["id"] == form_order
    # Another salesperson's key with that key and intent must not be shown vendedor1's order.
    stranger = Api(live_server, new_key(db, "vendedor2")).post_order(body, data["request_id"])
    assert stranger.status_code == 422 and stranger.json()["reason"] == "idempotency_key_reused"
    page = session.get(f"{live_server}/orders/{form_order}", timeout=10).text
    assert 'data-order-source="form"' in page
    api_order = (
        Api(live_server, new_key(db, "vendedor1", name="tienda-web"))
        .post_order(order_body(db, [("TOR-010", 3)]), uuid.uuid4())
        .json()["id"]
    )
    page = session.get(f"{live_server}/orders/{api_order}", timeout=10).text
    assert 'data-order-source="api"' in page and "tienda-web" in page


def test_a_confirmed_api_order_wakes_the_relay_after_its_commit(live_server, db, settings, redis_client):
    response = Api(live_server, new_key(db)).post_order(order_body(db, [("COR-200", 1)]), uuid.uuid4())
    assert response.status_code == 201 and len(response.json()["events"]) == 2
    # One RQ job for the order's two events (ADR-008); without it only the sweeper would find them. The
    # web tier rings from a thread after the answer (nexo/outbox/wakeup.py), so the job may land just after.
    queue = f"rq:queue:{settings.relay_queue}"
    wait_until(lambda: redis_client.llen(queue) >= 1, timeout=10, message="the order's wake-up")
    assert redis_client.llen(queue) == 1
