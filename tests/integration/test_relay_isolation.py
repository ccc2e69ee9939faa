"""Isolation per destination in the batched relay (ADR-010, ADR-008).

A destination that does not answer only ever holds up its own events: batches are claimed per
destination and the destinations' lanes run side by side. Real worker processes and real fakes.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from rq import Queue, Worker

from nexo.db import Database
from nexo.outbox import relay as relay_service
from nexo.outbox import repository as repo
from nexo.outbox import sweeper, wakeup
from nexo.outbox.http_client import HttpClient
from nexo.settings import Settings
from tests.relay_fixtures import event_rows, insert_confirmed_orders, relay_settings, wait_until
from tests.relay_support import RELAY_TEST_ENV

# A long deadline, so "held up by the other destination" (≥ 5 s) stands far apart from "not held up".
SLOW_DEADLINE_ENV = {"RELAY_DELIVERY_TIMEOUT_S": "5", "RELAY_JOB_TIMEOUT_S": "7", "RELAY_LEASE_S": "8"}


def test_a_destination_that_does_not_answer_does_not_hold_up_the_other(db, redis_client, fakes, relay):
    fakes.set_mode("warehouse", "no_answer", delay_s=30)
    settings = Settings.from_env({**os.environ, **RELAY_TEST_ENV, **SLOW_DEADLINE_ENV})
    relay.start_workers(1, **SLOW_DEADLINE_ENV)
    queue = Queue(settings.relay_queue, connection=redis_client, serializer="json")
    wait_until(lambda: Worker.all(queue=queue), timeout=30, message="the worker registered")
    orders = insert_confirmed_orders(db, 8)
    for o in orders:  # one coalesced drain job, as eight orders committed together would ring
        wakeup.request_delivery([o.fiscal_event_id, o.warehouse_event_id], connection=redis_client, settings=settings)
    fiscal = [o.fiscal_event_id for o in orders]
    started = time.monotonic()
    wait_until(
        lambda: all(r["status"] == "ENTREGADO" for r in event_rows(db, fiscal).values()),
        timeout=4,
        message="every fiscal event delivered before one warehouse deadline (5 s) ran out",
    )
    assert time.monotonic() - started < 4
    assert len(fakes.effects("fiscal")) == 8
    assert fakes.effects("warehouse") == []


def test_batches_do_not_grow_after_a_timeout(db, fakes):
    """Each batch of a destination that times out is a single probe: one attempt per deadline, not 1, 2, 4."""
    fakes.set_mode("warehouse", "timeout_before", delay_s=3)
    settings = relay_settings()  # delivery timeout 1 s
    ctx = relay_service.RelayContext(
        settings=settings,
        db=Database(settings.database_url, max_size=2),
        http=HttpClient(settings.relay.delivery_timeout_s),
        worker="test@grow",
    )
    orders = insert_confirmed_orders(db, 8)
    ids = [o.warehouse_event_id for o in orders]
    try:
        outcomes = relay_service.deliver_events(ctx, ids, budget_s=2.5).outcomes  # room for three batches
    finally:
        ctx.close()
    assert outcomes and set(outcomes) == {relay_service.REINTENTO}
    assert sum(r["attempts"] for r in event_rows(db, ids).values()) <= 3, outcomes


def test_a_sweeper_withdrawing_a_drain_job_delivers_the_events_it_coalesced_within_the_grace(db, redis_client, fakes):
    """No worker alive and the drain job waited a lease: events that coalesced into it a moment ago, too
    young for the sweeper's due list, are delivered by the same sweep that withdraws the job."""
    settings = relay_settings()  # lease 3 s, sweep interval 0.5 s (so a 0.5 s grace)
    early = insert_confirmed_orders(db, 1)[0]
    wakeup.request_delivery([early.fiscal_event_id, early.warehouse_event_id], connection=redis_client, settings=settings)
    [job] = Queue(settings.relay_queue, connection=redis_client, serializer="json").jobs
    job.enqueued_at = datetime.now(UTC) - timedelta(seconds=10)  # waited longer than a lease
    job.save()
    time.sleep(0.6)  # the early order is past the grace, so the sweep sees it due
    late = insert_confirmed_orders(db, 1)[0]
    wakeup.request_delivery([late.fiscal_event_id, late.warehouse_event_id], connection=redis_client, settings=settings)
    assert Queue(settings.relay_queue, connection=redis_client, serializer="json").count == 1  # coalesced into the old job
    ctx = relay_service.RelayContext(
        settings=settings,
        db=Database(settings.database_url, max_size=2),
        http=HttpClient(settings.relay.delivery_timeout_s),
        worker="test@sweep",
    )
    try:
        result = sweeper.sweep_once(ctx, wakeup.Wakeup(redis_client, settings))
    finally:
        ctx.close()
    ids = [early.fiscal_event_id, early.warehouse_event_id, late.fiscal_event_id, late.warehouse_event_id]
    assert {r["status"] for r in event_rows(db, ids).values()} == {"ENTREGADO"}, result
    assert Queue(settings.relay_queue, connection=redis_client, serializer="json").count == 0


def test_a_drain_job_that_could_not_be_enqueued_leaves_no_flag_behind(redis_client, monkeypatch):
    """Any failure, not only a Redis error: otherwise every commit of the next lease coalesces into no job."""
    settings = relay_settings()
    queue = Queue(settings.relay_queue, connection=redis_client, serializer="json")

    def broken_enqueue(self, *args, **kwargs):
        raise ValueError("rq refused the job")  # not a redis.RedisError

    with monkeypatch.context() as patch:
        patch.setattr(Queue, "enqueue_many", broken_enqueue)
        wakeup.request_delivery(["first-fiscal"], connection=redis_client, settings=settings)  # never raises
    assert queue.count == 0
    assert not redis_client.exists(wakeup.pending_key(settings.relay_queue))
    wakeup.request_delivery(["next-fiscal"], connection=redis_client, settings=settings)
    assert queue.count == 1  # the next commit rings a job of its own


def test_recording_a_batch_locks_its_events_in_id_order(db):
    """Two claimants recording overlapping events must lock them in one order, or they can deadlock.

    A batch handed over in descending id order, its higher event held by someone else: while the record
    waits for that one, it already holds the lower one (id order), never the other way round.
    """
    order = insert_confirmed_orders(db, 1)[0]
    with db.transaction() as tx:
        claimed = repo.claim_due(
            tx.conn,
            lease_s=3,
            worker="test@order",
            max_attempts=8,
            limit=2,
            ids=[order.fiscal_event_id, order.warehouse_event_id],
        )
        tx.commit()
    low, high = sorted(claimed, key=lambda e: e["id"])
    with db.transaction() as holder:
        holder.execute("SELECT id FROM outbox_event WHERE id = %s FOR UPDATE", [high["id"]])

        def record():
            with db.transaction() as tx:
                repo.record_outcomes(tx.conn, [(e["id"], e["claim_token"], "REINTENTO", 0.1, "x") for e in (high, low)])
                tx.commit()

        recorder = threading.Thread(target=record)
        recorder.start()
        try:
            wait_until(lambda: _waiting_on_a_lock(db), timeout=10, message="the record waits for the held event")
            with db.transaction() as probe, pytest.raises(psycopg.errors.LockNotAvailable):
                probe.execute("SELECT id FROM outbox_event WHERE id = %s FOR UPDATE NOWAIT", [low["id"]])
        finally:
            holder.conn.rollback()
    recorder.join(timeout=10)
    assert not recorder.is_alive()
    assert {r["claim_token"] for r in event_rows(db, [low["id"], high["id"]]).values()} == {
        low["claim_token"],
        high["claim_token"],
    }


def _waiting_on_a_lock(db) -> bool:
    with db.reading() as conn:
        return (
            conn.execute(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
            ).fetchone()["n"]
            > 0
        )
