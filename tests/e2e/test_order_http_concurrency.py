"""The 9:14 race and the 10:40 double submit over real HTTP: gunicorn (2 workers × 8 threads) on real Postgres."""

from __future__ import annotations

import re
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import requests

from tests.e2e.order_forms import form_data, order_id_from
from tests.helpers import http_login
from tests.integration.order_helpers import count, stock


def post_all_at_once(base_url: str, session: requests.Session, bodies: list[dict]) -> list[requests.Response]:
    """POST every body to /orders/new at the same moment, each on its own connection with the same login."""
    barrier = threading.Barrier(len(bodies))

    def post(body):
        own = requests.Session()
        own.cookies.update(session.cookies)
        barrier.wait()
        return own.post(base_url + "/orders/new", data=body, allow_redirects=False, timeout=60)

    with ThreadPoolExecutor(max_workers=len(bodies)) as pool:
        return list(pool.map(post, bodies))


def test_twenty_simultaneous_posts_of_one_form_make_one_order_and_all_answer_with_it(live_server, db):
    session = http_login(live_server, "vendedor1")
    html = session.get(live_server + "/orders/new", timeout=10).text
    body = form_data(html, "Corralón del Sur", [("CAB-045", 40)])
    responses = post_all_at_once(live_server, session, [body] * 20)
    assert [r.status_code for r in responses] == [303] * 20
    assert len({order_id_from(r.headers["Location"]) for r in responses}) == 1
    assert count(db, "SELECT count(*) FROM orders") == 1
    assert stock(db, "CAB-045") == {"on_hand": 40, "reserved": 40}


def test_thirty_salespeople_posting_for_the_last_cor118_one_wins_the_rest_get_insufficient_stock(live_server, db):
    names = [f"Cliente HTTP {i:02d}" for i in range(30)]  # own clients: only the stock row is shared
    with db.transaction() as tx:
        for name in names:
            tx.execute("INSERT INTO client (name, tier, credit_limit_cents) VALUES (%s, 'REGULAR', 1000000000)", [name])
        tx.commit()
    session = http_login(live_server, "vendedor2")
    html = session.get(live_server + "/orders/new", timeout=10).text
    bodies = [form_data(html, name, [("COR-118", 1)], request_id=str(uuid.uuid4())) for name in names]
    responses = post_all_at_once(live_server, session, bodies)
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [303] + [422] * 29
    for response in responses:
        if response.status_code == 422:
            assert re.findall(r'data-reason="(\w+)"', response.text) == ["insufficient_stock"]
    level = stock(db, "COR-118")
    assert level["reserved"] <= level["on_hand"] and level == {"on_hand": 1, "reserved": 1}
    assert count(db, "SELECT count(*) FROM orders") == 1
