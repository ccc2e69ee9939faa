"""A stop (SIGTERM: a deploy, supervisorctl stop) spends no attempt (guarantee 15, ADR-014).

A real worker busy with a batch job, and a real sweeper delivering by itself, are sent SIGTERM while an
attempt is in flight: each finishes that attempt, records its outcome, claims no further event and
exits. Before, the worker went through the whole batch and the sweeper through a whole lease, so the
supervisor's SIGKILL landed mid-delivery and the attempt counted without an outcome.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import replace

import pytest

from nexo.outbox.wakeup import request_delivery
from tests.helpers import free_port
from tests.relay_fixtures import event_rows, insert_confirmed_orders, relay_settings, wait_until

pytestmark = pytest.mark.slow

# A job long enough for the whole batch, so only the stop can end it early.
LONG_JOB = {"RELAY_DELIVERY_TIMEOUT_S": "1", "RELAY_JOB_TIMEOUT_S": "10", "RELAY_LEASE_S": "11"}
EVENTS = 5


def open_attempts(db, ids):
    with db.reading() as conn:
        return conn.execute(
            "SELECT * FROM delivery_attempt WHERE event_id = ANY(%s) AND finished_at IS NULL", [list(ids)]
        ).fetchall()


def stop_mid_delivery(db, relay, proc, ids):
    """SIGTERM once an attempt is under way; return the rows once the process has exited."""
    wait_until(lambda: open_attempts(db, ids), timeout=30, interval=0.02, message="an attempt is under way")
    os.kill(proc.pid, signal.SIGTERM)
    try:
        code = proc.wait(timeout=5)  # the attempt in flight (0.7 s) plus its bookkeeping, not the batch
    except subprocess.TimeoutExpired:
        pytest.fail("the process did not stop after its attempt in flight:\n" + relay.log(proc))
    assert code == 0, relay.log(proc)
    return event_rows(db, ids).values()


def assert_one_attempt_spent_and_recorded(db, rows, ids):
    tried = [r for r in rows if r["attempts"] > 0]
    assert len(tried) == 1, f"{len(tried)} events claimed after the stop was asked for"
    assert tried[0]["status"] == "ENTREGADO"
    assert open_attempts(db, ids) == []


def test_a_worker_stopped_mid_batch_finishes_its_attempt_and_claims_no_more(db, redis_client, fakes, relay):
    fakes.set_mode("fiscal", "timeout_after", delay_s=0.7)  # applied, answered within the deadline
    ids = [o.fiscal_event_id for o in insert_confirmed_orders(db, EVENTS)]
    [worker] = relay.start_workers(1, **LONG_JOB)
    settings = relay_settings()  # one wake-up job for the whole batch, with the long job timeout
    settings = replace(settings, relay=replace(settings.relay, job_timeout_s=float(LONG_JOB["RELAY_JOB_TIMEOUT_S"])))
    request_delivery(ids, connection=redis_client, settings=settings)

    rows = stop_mid_delivery(db, relay, worker, ids)
    assert_one_attempt_spent_and_recorded(db, rows, ids)


def test_a_sweeper_stopped_while_delivering_here_finishes_its_attempt_and_claims_no_more(db, fakes, relay):
    fakes.set_mode("fiscal", "timeout_after", delay_s=0.7)
    ids = [o.fiscal_event_id for o in insert_confirmed_orders(db, EVENTS)]
    # Redis unreachable: the sweeper delivers every due event itself, for up to a lease per sweep.
    [sweeper] = relay.start_sweepers(1, REDIS_URL=f"redis://127.0.0.1:{free_port()}/0", **LONG_JOB)

    rows = stop_mid_delivery(db, relay, sweeper, ids)
    assert_one_attempt_spent_and_recorded(db, rows, ids)
