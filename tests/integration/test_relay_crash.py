"""At-least-once under crashes: kill -9 mid-delivery, and a late worker whose lease expired (guarantee 9)."""

from __future__ import annotations

import os
import signal

import pytest

from nexo.outbox.wakeup import request_delivery
from tests.helpers import free_port
from tests.relay_fixtures import (
    attempts_of,
    event_row,
    insert_confirmed_orders,
    relay_settings,
    wait_until,
)

pytestmark = pytest.mark.slow

# A worker slow enough to be caught mid-delivery: 2 s HTTP timeout inside a 3 s job and a 4 s lease.
SLOW_WORKER = {"RELAY_DELIVERY_TIMEOUT_S": "2", "RELAY_JOB_TIMEOUT_S": "3", "RELAY_LEASE_S": "4"}
# The sweeper frozen mid-delivery must be frozen while it waits on the fakes, never while it records: a
# process stopped inside its recording transaction holds row locks that the newer claimant's record
# waits on. A 6 s wait on the fakes gives the test's poll that much margin on a loaded machine.
LATE_SWEEPER = {"RELAY_DELIVERY_TIMEOUT_S": "6", "RELAY_JOB_TIMEOUT_S": "7", "RELAY_LEASE_S": "8"}


def open_attempt(db, event_id):
    return next((a for a in attempts_of(db, event_id) if a["finished_at"] is None), None)


def invoice_of(db, order_id):
    with db.reading() as conn:
        return conn.execute("SELECT billing_status, invoice_number FROM orders WHERE id = %s", [order_id]).fetchone()


def wake(redis_client, event_id):
    request_delivery([event_id], connection=redis_client, settings=relay_settings())


@pytest.mark.parametrize("mode", ["timeout_before", "timeout_after"])
def test_kill_9_mid_delivery_is_retried_after_the_lease_and_applied_once(db, redis_client, fakes, relay, mode):
    """timeout_before: killed before the fake applied it; timeout_after: killed after it applied it."""
    fakes.set_mode("fiscal", mode, times=1, delay_s=10)
    [victim] = relay.start_workers(1, **SLOW_WORKER)
    order = insert_confirmed_orders(db, 1)[0]
    wake(redis_client, order.fiscal_event_id)

    wait_until(
        lambda: open_attempt(db, order.fiscal_event_id),
        timeout=30,
        interval=0.02,
        message="the worker claimed the event and is waiting on the fake",
    )
    if mode == "timeout_after":
        wait_until(lambda: fakes.effect("fiscal", order.fiscal_event_id), timeout=5, interval=0.02)
    else:
        assert fakes.effect("fiscal", order.fiscal_event_id) is None
    relay.kill(victim)
    claim = event_row(db, order.fiscal_event_id)
    assert claim["status"] == "PENDIENTE" and claim["locked_until"] is not None  # a lease, nobody behind it

    relay.start_workers(1)
    relay.start_sweepers(1)
    wait_until(
        lambda: event_row(db, order.fiscal_event_id)["status"] == "ENTREGADO",
        timeout=40,
        message="delivered by another worker once the lease expired",
    )
    effects = fakes.effects("fiscal")
    assert [e["key"] for e in effects] == [str(order.fiscal_event_id)]
    billed = invoice_of(db, order.order_id)
    assert billed["billing_status"] == "FACTURADO"
    assert billed["invoice_number"] == effects[0]["result"]["invoice_number"]
    attempts = attempts_of(db, order.fiscal_event_id)
    # The killed worker never wrote an outcome; the next claim closed its attempt (ADR-014).
    assert attempts[0]["outcome"] == "SIN_RESULTADO" and attempts[0]["finished_at"] is not None
    assert attempts[-1]["outcome"] == "ENTREGADO" and attempts[-1]["claim_token"] != attempts[0]["claim_token"]
    assert event_row(db, order.fiscal_event_id)["attempts"] == len(attempts)


def test_late_outcome_from_an_expired_lease_does_not_overwrite_the_newer_one(db, fakes, relay):
    # The late claimant is a sweeper delivering by itself because it cannot reach Redis: no RQ job
    # timeout will end it, so only the claim-token fence stands between its late outcome and the newer one.
    # Both of the order's events wait on their fakes: a sweeper frozen while it records the handoff would
    # hold the order's row lock (record_all locks it first), and every later outcome of the order would wait.
    fakes.set_mode("fiscal", "timeout_before", times=1, delay_s=10)
    fakes.set_mode("warehouse", "timeout_before", times=1, delay_s=10)
    [late] = relay.start_sweepers(1, REDIS_URL=f"redis://127.0.0.1:{free_port()}/0", **LATE_SWEEPER)
    order = insert_confirmed_orders(db, 1)[0]
    first = wait_until(lambda: open_attempt(db, order.fiscal_event_id), timeout=30, interval=0.02)
    os.kill(late.pid, signal.SIGSTOP)  # frozen mid-delivery, holding a lease that will expire
    try:
        assert open_attempt(db, order.fiscal_event_id)["id"] == first["id"], "froze the sweeper too late"
        # The next claimant is told 503 and backs off for a long time: its outcome must stand.
        fakes.set_mode("fiscal", "error_5xx", times=1)
        relay.start_workers(1, RELAY_BACKOFF_BASE_S="30", RELAY_BACKOFF_CAP_S="60")
        relay.start_sweepers(1)

        def newer_outcome_recorded():
            rows = attempts_of(db, order.fiscal_event_id)
            return len(rows) >= 2 and rows[1]["outcome"] == "REINTENTO"

        try:
            wait_until(newer_outcome_recorded, timeout=40, message="a worker took over after the lease expired")
        except pytest.fail.Exception as failed:  # say what the event and its claimants were doing
            raise AssertionError(
                f"{failed}\nevent: {event_row(db, order.fiscal_event_id)}\nattempts: {attempts_of(db, order.fiscal_event_id)}"
                f"\nlate sweeper: {relay.log(late)[-3000:]}\nothers: {[relay.log(p)[-2000:] for p in relay.procs[1:]]}"
            ) from None
        newer = event_row(db, order.fiscal_event_id)
    finally:
        os.kill(late.pid, signal.SIGCONT)

    wait_until(
        lambda: "lease lost before recording" in relay.log(late), timeout=30, message="the frozen sweeper woke up and finished"
    )
    # Its attempt was closed when the newer claim took the event; a closed attempt row is final (ADR-014).
    assert attempts_of(db, order.fiscal_event_id)[0]["outcome"] == "SIN_RESULTADO"
    after = event_row(db, order.fiscal_event_id)
    assert after["claim_token"] == newer["claim_token"]
    assert (after["status"], after["attempts"], after["last_error"], after["next_attempt_at"]) == (
        newer["status"],
        newer["attempts"],
        newer["last_error"],
        newer["next_attempt_at"],
    )
    assert after["last_error"].startswith("HTTP 503")
