"""SERVER_TIMING=on: each answer says where its time went (nexo/request_timing.py), which the bench's
mixed phase reads to split the order POST's tail; off, nothing of it is answered."""

from __future__ import annotations

import dataclasses
import re
import time

import pytest

from nexo import create_app
from nexo.settings import Settings
from tests.e2e.order_forms import form_data
from tests.helpers import DEMO_PASSWORD, csrf_token


@pytest.fixture
def timed_app():
    application = create_app(dataclasses.replace(Settings.from_env(), server_timing=True), test_config={"TESTING": True})
    yield application
    application.extensions["nexo.db"].close()


def _parts(response) -> dict[str, float]:
    return {name: float(ms) for name, ms in re.findall(r"(\w+);dur=([\d.]+)", response.headers["Server-Timing"])}


def _log_in(client) -> None:
    token = csrf_token(client.get("/login").get_data(as_text=True))
    assert (
        client.post("/login", data={"username": "vendedor1", "password": DEMO_PASSWORD, "csrf_token": token}).status_code == 302
    )


def test_an_order_post_answers_its_queue_pool_transaction_and_app_time(timed_app):
    client = timed_app.test_client()
    _log_in(client)
    form = form_data(client.get("/orders/new").get_data(as_text=True), "Corralón del Sur", [("COR-200", 1)])
    sent = time.time() - 0.25  # as if the request had waited a quarter of a second for a thread
    began = time.perf_counter()
    answer = client.post("/orders/new", data=form, headers={"X-Request-Start": f"t={sent:.6f}"})
    took_ms = (time.perf_counter() - began) * 1000
    assert answer.status_code == 303
    parts = _parts(answer)
    assert set(parts) == {"queue", "pool", "tx", "app"}
    assert 250 <= parts["queue"] < 250 + 5_000
    # The transactions and the pool wait are inside the handler's time, which is inside the client's.
    assert parts["pool"] + parts["tx"] <= parts["app"] <= took_ms
    assert parts["tx"] > 0


def test_no_queue_part_without_a_readable_request_start_and_nothing_when_off(timed_app, client):
    timed = timed_app.test_client()
    for header in ({}, {"X-Request-Start": "ayer"}, {"X-Request-Start": "t=-5"}):
        parts = _parts(timed.get("/login", headers=header))
        assert "queue" not in parts and parts["app"] > 0
    assert "Server-Timing" not in client.get("/login").headers  # the default app: SERVER_TIMING off
