"""Losing Redis only delays events (guarantee 9): orders still commit, and every event is delivered."""

from __future__ import annotations

import pytest

from nexo import create_app
from tests.e2e.order_forms import form_data, order_id_from
from tests.helpers import DEMO_PASSWORD, csrf_token
from tests.relay_fixtures import wait_until

pytestmark = pytest.mark.slow


def events_of(db, order_id):
    with db.reading() as conn:
        return conn.execute(
            "SELECT e.id, e.status, array_agg(a.worker ORDER BY a.id) AS workers"
            " FROM outbox_event e LEFT JOIN delivery_attempt a ON a.event_id = e.id"
            " WHERE e.aggregate_id = %s GROUP BY e.id, e.status",
            [order_id],
        ).fetchall()


def all_delivered(db, order_id):
    rows = events_of(db, order_id)
    return len(rows) == 2 and all(r["status"] == "ENTREGADO" for r in rows) and rows


def place_order(client, quantity=1):
    html = client.get("/orders/new").get_data(as_text=True)
    response = client.post("/orders/new", data=form_data(html, "Corralón del Sur", [("TOR-010", quantity)]))
    assert response.status_code == 303, response.get_data(as_text=True)[:500]
    return order_id_from(response.headers["Location"])


@pytest.fixture
def app_on_private_redis(private_redis, monkeypatch):
    monkeypatch.setenv("REDIS_URL", private_redis.url)
    application = create_app(test_config={"TESTING": True})
    yield application
    application.extensions["nexo.db"].close()


def test_orders_commit_while_redis_is_down_and_every_event_is_delivered(db, fakes, relay, private_redis, app_on_private_redis):
    client = app_on_private_redis.test_client()
    token = csrf_token(client.get("/login").get_data(as_text=True))
    client.post("/login", data={"username": "vendedor1", "password": DEMO_PASSWORD, "csrf_token": token})
    relay.start_workers(1, REDIS_URL=private_redis.url)
    relay.start_sweepers(1, REDIS_URL=private_redis.url)

    before = place_order(client)
    wait_until(lambda: all_delivered(db, before), timeout=30, message="delivered with Redis up")

    private_redis.stop()
    during = [place_order(client) for _ in range(3)]  # 303 each: no 500 without Redis
    for order_id in during:
        assert client.get(f"/orders/{order_id}").status_code == 200
    # The sweeper cannot enqueue wake-ups, so it delivers by itself: losing Redis only delays events.
    for order_id in during:
        rows = wait_until(lambda o=order_id: all_delivered(db, o), timeout=60, message="delivered without Redis")
        assert all(w.startswith("sweeper@") for r in rows for w in r["workers"])

    private_redis.start()  # empty: every queued wake-up was lost
    after = place_order(client)
    rows = wait_until(lambda: all_delivered(db, after), timeout=30, message="delivered after Redis returned")
    assert any(w.startswith("worker@") for r in rows for w in r["workers"])
    effects = {e["key"] for dest in ("fiscal", "warehouse") for e in fakes.effects(dest)}
    assert len(effects) == 2 * 5
