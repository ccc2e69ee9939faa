"""Webhooks for integrations (ADR-022), end to end: a real gunicorn, real RQ workers and sweepers, a real
receiver process (sandbox/webhook_receiver.py) — killed workers and a receiver that is down included."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid

import pytest
import requests

from nexo.outbox import webhooks
from tests.e2e.api_support import Api, new_key, order_body
from tests.e2e.test_credit_queue import approve_data
from tests.helpers import free_port, http_login
from tests.relay_fixtures import _start_fake, wait_until

PLATINO = "Ferretería Platino SA"
ALL_EVENTS = list(webhooks.EVENTS)


class Receiver:
    """A running sandbox.webhook_receiver process."""

    def __init__(self, tmp_path, name: str = "receiver"):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.hook_url = self.url + "/hooks"
        self.storage = tmp_path / f"{name}.sqlite3"
        self.log = tmp_path / f"{name}.log"
        self.proc = None
        self.start()

    def start(self) -> None:
        self.proc = _start_fake("sandbox.webhook_receiver", self.port, self.storage, self.log)
        wait_until(self._up, timeout=20, message="the receiver did not start")

    def _up(self) -> bool:
        try:
            return requests.get(self.url + "/__sandbox/health", timeout=1).ok
        except requests.RequestException:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def set_mode(self, mode: str, **fields) -> None:
        requests.post(self.url + "/__sandbox/mode", json={"mode": mode, **fields}, timeout=5).raise_for_status()

    def notices(self) -> list[dict]:
        """What it accepted, one per Idempotency-Key, in the order it first accepted them."""
        return requests.get(self.url + "/__sandbox/effects", timeout=5).json()

    def requests(self) -> list[dict]:
        """Every POST as it came (replays included): key, signature header, raw body."""
        return requests.get(self.url + "/__sandbox/requests", timeout=5).json()


@pytest.fixture
def receiver(tmp_path):
    running = Receiver(tmp_path)
    yield running
    running.stop()


def subscribe(api: Api, url: str, events=ALL_EVENTS) -> dict:
    response = api.call("post", "/api/v1/webhooks", json={"url": url, "events": events})
    assert response.status_code == 201, response.text
    return response.json()


def verify(secret: str, signature_header: str, body: bytes, tolerance_s: int = 300) -> bool:
    """README "Webhooks": how an integration checks X-Nexo-Signature, in five lines."""
    fields = dict(part.split("=", 1) for part in signature_header.split(","))
    expected = hmac.new(secret.encode(), fields["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
    fresh = abs(time.time() - int(fields["t"])) <= tolerance_s
    return fresh and hmac.compare_digest(expected, fields["v1"])


def types_of(notices: list[dict], order_id: str) -> list[str]:
    mine = [n["payload"] for n in notices if n["payload"]["order"]["id"] == order_id]
    return [n["type"] for n in sorted(mine, key=lambda n: n["sequence"])]


def test_an_integration_hears_of_its_orders_whole_life_signed_once_each_and_in_order(live_server, db, fakes, relay, receiver):
    relay.start_workers(1)
    relay.start_sweepers(1)
    api = Api(live_server, new_key(db))
    created = subscribe(api, receiver.hook_url)
    assert created["secret"].startswith("whsec_") and created["events"] == ALL_EVENTS
    listed = api.call("get", "/api/v1/webhooks").json()["webhooks"]
    assert [w["id"] for w in listed] == [created["id"]] and "secret" not in listed[0]

    confirmed = api.post_order(order_body(db, [("TOR-010", 2)]), uuid.uuid4()).json()
    wait_until(lambda: "order.invoiced" in types_of(receiver.notices(), confirmed["id"]), message="invoice notice")
    assert api.cancel(confirmed["id"]).status_code == 200
    wait_until(lambda: "order.cancelled" in types_of(receiver.notices(), confirmed["id"]), message="cancel notice")
    assert types_of(receiver.notices(), confirmed["id"]) == ["order.confirmed", "order.invoiced", "order.cancelled"]
    # They also arrived in that order, and each says what the order was at that moment.
    arrived = [n["payload"] for n in receiver.notices() if n["payload"]["order"]["id"] == confirmed["id"]]
    assert [n["sequence"] for n in arrived] == [1, 2, 3]
    assert arrived[1]["order"]["invoice_number"] and arrived[1]["order"]["billing_status"] == "FACTURADO"
    assert arrived[2]["order"]["status"] == "ANULADO" and arrived[2]["order"]["number"] == confirmed["number"]

    # The pending path: waits for credit, then the credit officer approves it on her page.
    pending = api.post_order(order_body(db, [("COR-200", 5)], client=PLATINO), uuid.uuid4()).json()
    assert pending["status"] == "PENDIENTE_AUTORIZACION"
    laura = http_login(live_server, "laura")
    queue = laura.get(live_server + "/credit/queue", timeout=10).text
    approved = laura.post(
        f"{live_server}/credit/queue/{pending['id']}/approve", data=approve_data(queue, pending["id"]), allow_redirects=False
    )
    assert approved.status_code == 303
    wait_until(lambda: "order.invoiced" in types_of(receiver.notices(), pending["id"]), message="approval and invoice")
    assert types_of(receiver.notices(), pending["id"]) == ["order.pending_authorization", "order.approved", "order.invoiced"]

    # Dispatched by the warehouse's own key: the integration that posted the order hears of it.
    warehouse = Api(live_server, new_key(db, "sergio"))
    assert warehouse.ship(confirmed["id"], [("TOR-010", 1)]).status_code == 409  # cancelled: nothing to ship
    assert warehouse.ship(pending["id"], [("COR-200", 5)]).status_code == 201
    wait_until(lambda: "order.dispatched" in types_of(receiver.notices(), pending["id"]), message="dispatch notice")

    # Every notice is signed under the subscription's secret over the exact body, and its key is its id.
    posts = receiver.requests()
    assert posts and all(verify(created["secret"], p["signature"], p["body"].encode()) for p in posts)
    assert all(json.loads(p["body"])["id"] == p["key"] for p in posts)
    assert not verify("whsec_someone-else", posts[0]["signature"], posts[0]["body"].encode())
    # Each notice was accepted once: as many keys as notices Nexo wrote, all delivered.
    with db.reading() as conn:
        written = conn.execute("SELECT id, status FROM outbox_event WHERE subscription_id = %s", [created["id"]]).fetchall()
    assert {str(r["id"]) for r in written} == {n["key"] for n in receiver.notices()}
    assert {r["status"] for r in written} == {"ENTREGADO"}


def test_orders_of_the_form_and_of_other_keys_and_unasked_events_send_nothing(live_server, db, fakes, relay, receiver):
    relay.start_workers(1)
    mine, other = Api(live_server, new_key(db)), Api(live_server, new_key(db))
    subscribe(mine, receiver.hook_url, events=["order.cancelled"])
    theirs = other.post_order(order_body(db, [("TOR-010", 1)]), uuid.uuid4()).json()
    assert other.cancel(theirs["id"]).status_code == 200
    order = mine.post_order(order_body(db, [("TOR-010", 1)]), uuid.uuid4()).json()
    assert mine.cancel(order["id"]).status_code == 200
    wait_until(receiver.notices, message="the cancel notice")
    time.sleep(1.5)  # time enough for a stray notice to arrive
    assert [n["payload"]["type"] for n in receiver.notices()] == ["order.cancelled"]
    assert receiver.notices()[0]["payload"]["order"]["id"] == order["id"]


def test_a_killed_worker_and_a_receiver_down_for_a_while_still_deliver_every_notice_once_in_order(
    live_server, db, fakes, relay, receiver
):
    api = Api(live_server, new_key(db))
    subscribe(api, receiver.hook_url, events=["order.confirmed", "order.cancelled"])
    # The receiver applies each notice and then answers too late: every first attempt times out although
    # it arrived, so each is sent again and must still count once.
    receiver.set_mode("timeout_after", delay_s=1.5)
    (worker,) = relay.start_workers(1)
    orders = [api.post_order(order_body(db, [("TOR-010", 1)]), uuid.uuid4()).json() for _ in range(6)]
    for order in orders[:3]:
        assert api.cancel(order["id"]).status_code == 200
    wait_until(lambda: len(receiver.notices()) >= 2, timeout=30, message="some notices arrived")
    relay.kill(worker)  # mid-delivery: leases run out, the sweeper takes over
    receiver.stop()  # and the receiver goes down for a while
    relay.start_sweepers(1)
    time.sleep(3)
    receiver.start()
    receiver.set_mode("ok")
    relay.start_workers(1)
    expected = 6 + 3
    wait_until(lambda: len(receiver.notices()) == expected, timeout=90, message="every notice arrived")
    notices = receiver.notices()
    assert len({n["key"] for n in notices}) == expected  # once each, by key
    assert any(n["deliveries"] > 1 for n in notices)  # some were sent again and not applied twice
    for order in orders[:3]:  # per order, the cancel never overtook the confirmation
        assert types_of(notices, order["id"]) == ["order.confirmed", "order.cancelled"]
        keys_in_arrival = [n["payload"]["sequence"] for n in notices if n["payload"]["order"]["id"] == order["id"]]
        assert keys_in_arrival == [1, 2]
    with db.reading() as conn:
        statuses = conn.execute(
            "SELECT status, count(*) AS n FROM outbox_event WHERE destination = 'webhook' GROUP BY status"
        ).fetchall()
    assert {r["status"]: r["n"] for r in statuses} == {"ENTREGADO": expected}


def test_one_receiver_that_never_answers_does_not_hold_the_others(live_server, db, fakes, relay, tmp_path, receiver):
    dead = Receiver(tmp_path, "dead")
    try:
        dead.set_mode("timeout_before", delay_s=30)
        healthy_api, dead_api = Api(live_server, new_key(db)), Api(live_server, new_key(db))
        subscribe(healthy_api, receiver.hook_url, events=["order.confirmed"])
        subscribe(dead_api, dead.hook_url, events=["order.confirmed"])
        relay.start_workers(1)
        for _ in range(8):
            dead_api.post_order(order_body(db, [("TOR-010", 1)]), uuid.uuid4())
        started = time.monotonic()
        healthy = [healthy_api.post_order(order_body(db, [("TOR-010", 1)]), uuid.uuid4()).json() for _ in range(8)]
        wait_until(lambda: len(receiver.notices()) == 8, timeout=30, message="the healthy receiver's notices")
        took = time.monotonic() - started
        # The invoices and handoffs of every order went out meanwhile too.
        wait_until(lambda: len(fakes.effects("fiscal")) == 16, timeout=30, message="every invoice")
        assert {n["payload"]["order"]["id"] for n in receiver.notices()} == {o["id"] for o in healthy}
        print(f"healthy receiver's 8 notices took {took:.1f} s with a dead receiver beside it")
    finally:
        dead.stop()


def test_a_refused_notice_becomes_a_dead_letter_and_does_not_hold_the_next_one(live_server, db, fakes, relay, receiver):
    api = Api(live_server, new_key(db))
    subscribe(api, receiver.hook_url, events=["order.confirmed", "order.cancelled"])
    receiver.set_mode("error_4xx", times=1)  # the first notice is refused for good
    relay.start_workers(1)
    order = api.post_order(order_body(db, [("TOR-010", 1)]), uuid.uuid4()).json()
    wait_until(lambda: _dead_letters(db), message="the refused notice's dead letter")
    assert api.cancel(order["id"]).status_code == 200
    wait_until(receiver.notices, message="the cancel notice went on")
    assert [n["payload"]["type"] for n in receiver.notices()] == ["order.cancelled"]
    admin = http_login(live_server, "marta")
    page = admin.get(live_server + "/admin/dead-letters", timeout=10).text
    assert 'data-destination="webhook"' in page or "Avisos a integraciones" in page


def _dead_letters(db) -> list:
    with db.reading() as conn:
        return conn.execute("SELECT id FROM dead_letter WHERE destination = 'webhook'").fetchall()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://example.com/hooks", "events": ["order.confirmed"]}, "url"),
        ({"url": "not a url at all", "events": ["order.confirmed"]}, "url"),
        ({"url": "https://user:pw@example.com/hooks", "events": ["order.confirmed"]}, "url"),
        ({"url": "https://example.com/hooks", "events": []}, "events"),
        ({"url": "https://example.com/hooks", "events": ["order.exploded"]}, "events"),
        ({"url": "https://example.com/hooks", "events": ["order.confirmed", "order.confirmed"]}, "events"),
        ({"url": "https://example.com/hooks"}, "events"),
    ],
)
def test_a_subscription_that_makes_no_sense_is_refused_and_nothing_is_kept(live_server, db, body, field):
    api = Api(live_server, new_key(db))
    response = api.call("post", "/api/v1/webhooks", json=body)
    assert response.status_code == 400, response.text
    assert field in json.dumps(response.json().get("errors", {}))
    assert api.call("get", "/api/v1/webhooks").json() == {"webhooks": []}


def test_a_key_has_at_most_ten_subscriptions_and_ends_only_its_own(live_server, db):
    api, other = Api(live_server, new_key(db)), Api(live_server, new_key(db))
    ids = [subscribe(api, f"https://example.com/hooks/{n}")["id"] for n in range(10)]
    eleventh = api.call("post", "/api/v1/webhooks", json={"url": "https://example.com/11", "events": ["order.confirmed"]})
    assert eleventh.status_code == 409 and eleventh.json()["reason"] == "webhook_limit"
    assert other.call("delete", f"/api/v1/webhooks/{ids[0]}").status_code == 404
    assert api.call("delete", f"/api/v1/webhooks/{ids[0]}").status_code == 204
    assert api.call("delete", f"/api/v1/webhooks/{ids[0]}").status_code == 404
    assert len(api.call("get", "/api/v1/webhooks").json()["webhooks"]) == 9


def test_ending_a_subscription_withdraws_what_it_had_not_received(live_server, db, receiver):
    api = Api(live_server, new_key(db))
    created = subscribe(api, receiver.hook_url, events=["order.confirmed"])
    api.post_order(order_body(db, [("TOR-010", 1)]), uuid.uuid4())  # no worker runs: the notice waits
    assert api.call("delete", f"/api/v1/webhooks/{created['id']}").status_code == 204
    with db.reading() as conn:
        rows = conn.execute("SELECT status FROM outbox_event WHERE subscription_id = %s", [created["id"]]).fetchall()
        audit = conn.execute(
            "SELECT details FROM audit_log WHERE action = 'webhook.deleted' AND object_id = %s", [str(created["id"])]
        ).fetchone()
    assert [r["status"] for r in rows] == ["RETIRADO"]
    assert audit["details"]["notices_withdrawn"] == 1
