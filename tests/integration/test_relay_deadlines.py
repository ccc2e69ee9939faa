"""Every attempt ends, every event ends (guarantee 16, ADR-014).

Real RQ worker and sweeper processes, real fakes told to misbehave over real HTTP (sandbox/modes.py).
Each destination that answers badly ends FALLIDO with its dead letter after at most
RELAY_MAX_ATTEMPTS attempts, each attempt inside the delivery deadline, and the worker survives.
"""

from __future__ import annotations

import os
import signal
import socket

import pytest
from rq import Queue

from nexo.outbox.wakeup import request_delivery
from tests.relay_fixtures import (
    attempts_of,
    dead_letters_of,
    event_row,
    event_rows,
    insert_confirmed_orders,
    relay_settings,
    wait_until,
)
from tests.relay_support import _children

pytestmark = pytest.mark.slow

MAX_ATTEMPTS = 2
DEADLINE_S = 1.0  # RELAY_DELIVERY_TIMEOUT_S of RELAY_TEST_ENV
# What a test on a loaded, shared machine allows beyond the deadline (the code itself waits 0.5 s more
# at most); the point is that no attempt lasts the job timeout, the dribble or the 20 MB.
MARGIN_S = 1.0


@pytest.fixture
def never_accepting():
    """A TCP port whose accept queue is full: a client's connect hangs (a slow connect)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(server.getsockname())
        fillers.append(filler)
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    for sock in (*fillers, server):
        sock.close()


# (mode, its fields, attempts it ends after): a permanent answer fails at once, the rest use them all.
MISBEHAVIOURS = [
    ("error_4xx_nul", {}, 1),  # NUL bytes in the error body
    ("error_4xx_bad_charset", {}, 1),  # Content-Type: ...; charset=bogus
    ("dribble", {"interval_s": 0.3}, MAX_ATTEMPTS),  # the answer, one byte every 0.3 s
    ("slow_headers", {"interval_s": 0.3, "delay_s": 60}, MAX_ATTEMPTS),
    ("huge_body", {"status": 503, "interval_s": 0.05}, MAX_ATTEMPTS),  # 20 MB at 1.3 MB/s
    ("no_answer", {"delay_s": 60}, MAX_ATTEMPTS),
    ("slow_connect", {}, MAX_ATTEMPTS),
]


@pytest.mark.parametrize("mode,fields,expected_attempts", MISBEHAVIOURS, ids=[m[0] for m in MISBEHAVIOURS])
def test_a_misbehaving_destination_ends_failed_with_a_dead_letter_each_attempt_within_the_deadline(
    db, redis_client, fakes, relay, never_accepting, mode, fields, expected_attempts
):
    env = {"RELAY_MAX_ATTEMPTS": str(MAX_ATTEMPTS)}
    if mode == "slow_connect":
        env["FISCAL_URL"] = never_accepting
    else:
        fakes.set_mode("fiscal", mode, **fields)
    [worker] = relay.start_workers(1, **env)
    relay.start_sweepers(1, **env)
    order = insert_confirmed_orders(db, 1)[0]
    request_delivery([order.fiscal_event_id], connection=redis_client, settings=relay_settings())

    wait_until(
        lambda: event_row(db, order.fiscal_event_id)["status"] == "FALLIDO",
        timeout=60,
        interval=0.1,
        message=f"{mode}: the event ends FALLIDO",
    )
    row = event_row(db, order.fiscal_event_id)
    assert row["attempts"] == expected_attempts <= MAX_ATTEMPTS
    assert "\x00" not in row["last_error"]
    attempts = attempts_of(db, order.fiscal_event_id)
    assert len(attempts) == expected_attempts
    for attempt in attempts:
        lasted = (attempt["finished_at"] - attempt["started_at"]).total_seconds()
        assert lasted <= DEADLINE_S + MARGIN_S, f"attempt {attempt['attempt_no']} lasted {lasted:.2f} s"
        assert attempt["duration_ms"] <= (DEADLINE_S + MARGIN_S) * 1000
    assert attempts[-1]["outcome"] == "FALLIDO"
    [letter] = dead_letters_of(db, order.fiscal_event_id)
    assert letter["status"] == "pending" and "\x00" not in letter["last_error"]
    if mode in ("error_4xx_nul", "error_4xx_bad_charset"):
        assert "solicitud rechazada" in row["last_error"] and letter["http_status"] == 400
    assert worker.poll() is None, "the worker crashed"
    assert "JobTimeoutException" not in relay.log(worker), "a job outlived its delivery deadline"


@pytest.mark.parametrize("victim", ["worker", "work_horse"])
def test_an_attempt_killed_mid_delivery_counts_and_its_event_fails_when_it_was_the_last(db, redis_client, fakes, relay, victim):
    """kill -9 of the worker (SimpleWorker), or of the job alone (the forking worker's work horse)."""
    from nexo.deadletters import service as dead_letters

    env = {
        "RELAY_MAX_ATTEMPTS": "1",
        "RELAY_DELIVERY_TIMEOUT_S": "2",
        "RELAY_JOB_TIMEOUT_S": "3",
        "RELAY_LEASE_S": "4",
        "RELAY_WORKER_CLASS": "fork" if victim == "work_horse" else "simple",
    }
    fakes.set_mode("fiscal", "timeout_before", times=1, delay_s=10)
    [worker] = relay.start_workers(1, **env)
    order = insert_confirmed_orders(db, 1)[0]
    request_delivery([order.fiscal_event_id], connection=redis_client, settings=relay_settings())

    def open_attempt():
        return next((a for a in attempts_of(db, order.fiscal_event_id) if a["finished_at"] is None), None)

    wait_until(open_attempt, timeout=30, interval=0.02, message="the attempt is under way")
    wait_until(
        lambda: fakes.http.get(fakes.fiscal_url + "/__sandbox/mode", timeout=5).json()["mode"] == "ok",
        timeout=5,
        interval=0.02,
        message="the POST reached the fake (its one timeout_before is used)",
    )
    if victim == "worker":
        relay.kill(worker)
    else:
        [horse] = wait_until(lambda: _children(worker.pid), timeout=5, interval=0.02)
        os.kill(horse, signal.SIGKILL)
    relay.start_sweepers(1, **env)

    wait_until(
        lambda: event_row(db, order.fiscal_event_id)["status"] == "FALLIDO",
        timeout=30,
        message="the event's only attempt was spent without an outcome",
    )
    row = event_row(db, order.fiscal_event_id)
    assert row["attempts"] == 1 and "sin registrar resultado" in row["last_error"]
    [attempt] = attempts_of(db, order.fiscal_event_id)
    assert attempt["outcome"] == "SIN_RESULTADO" and attempt["finished_at"] is not None
    [letter] = dead_letters_of(db, order.fiscal_event_id)
    assert (letter["status"], letter["error_signature"]) == ("pending", "fiscal:NoOutcome")
    assert fakes.effects("fiscal") == []
    if victim == "work_horse":
        assert worker.poll() is None, "killing the job must not take the worker down"

    # A replay starts a fresh cycle (ADR-010): the spent cycle does not stop it from being delivered.
    relay.start_workers(1, **env)
    assert dead_letters.replay(db, letter["id"], "marta").outcome == "done"
    wait_until(lambda: event_row(db, order.fiscal_event_id)["status"] == "ENTREGADO", timeout=30)
    assert event_row(db, order.fiscal_event_id)["attempts"] == 2
    assert [e["key"] for e in fakes.effects("fiscal")] == [str(order.fiscal_event_id)]


def test_with_every_worker_gone_the_sweeper_delivers_a_queued_wakeup_itself(db, redis_client, fakes, relay):
    """Redis up, a wake-up waiting in the queue, no worker to take it: the sweeper takes over after a lease."""
    [worker] = relay.start_workers(1)
    relay.kill(worker)
    order = insert_confirmed_orders(db, 1)[0]
    ids = [order.fiscal_event_id, order.warehouse_event_id]
    request_delivery(ids, connection=redis_client, settings=relay_settings())
    queue = Queue(relay_settings().relay_queue, connection=redis_client, serializer="json")
    assert queue.count == 1
    relay.start_sweepers(1)

    lease_s = float(relay.env["RELAY_LEASE_S"])
    wait_until(
        lambda: all(r["status"] == "ENTREGADO" for r in event_rows(db, ids).values()),
        timeout=lease_s + 12,
        interval=0.1,
        message="the sweeper delivered the events itself",
    )
    assert queue.count == 0, "the wake-up nobody picked up is withdrawn"
    assert len(fakes.effects("fiscal")) == 1 and len(fakes.effects("warehouse")) == 1
    workers = {a["worker"].split("@")[0] for i in ids for a in attempts_of(db, i)}
    assert workers == {"sweeper"}
