"""The wake-up: events woken up in batches, and the sweeper can tell which events a queued job covers."""

from rq import Queue

from nexo.outbox import wakeup
from tests.relay_fixtures import relay_settings
from tests.relay_support import without_queued_wakeup


def test_wakeups_are_batched_and_every_event_is_covered(redis_client):
    per_job = wakeup.EVENTS_PER_JOB
    events = [f"00000000-0000-0000-0000-{n:012d}" for n in range(2 * per_job + 10)]
    woken = wakeup.enqueue(redis_client, relay_settings(), [(e, "req-1") for e in events])
    queue = Queue(relay_settings().relay_queue, connection=redis_client, serializer="json")
    assert woken == len(events)
    # per_job + per_job + 10: rq's cost is paid per job, not per event
    assert [len(job.args[0]) for job in queue.jobs] == [per_job, per_job, 10]
    assert without_queued_wakeup(redis_client, relay_settings(), events + ["not-woken"]) == ["not-woken"]


def test_an_orders_two_events_share_one_job(redis_client):
    wakeup.request_delivery(["a-1", "a-2"], connection=redis_client, settings=relay_settings())
    queue = Queue(relay_settings().relay_queue, connection=redis_client, serializer="json")
    assert queue.count == 1
    assert queue.jobs[0].args[0] == ["a-1", "a-2"]


def test_a_batch_job_stops_claiming_before_its_timeout_could_cut_a_delivery_short(db, fakes):
    """A slow destination: the job delivers what fits in its time budget and leaves the rest unclaimed."""
    from nexo.db import Database
    from nexo.outbox import relay
    from nexo.outbox.http_client import HttpClient
    from tests.relay_fixtures import event_rows, insert_confirmed_orders

    settings = relay_settings()  # delivery timeout 1 s, job timeout 2 s: room to start one delivery
    fakes.set_mode("fiscal", "timeout_before", delay_s=3)
    orders = insert_confirmed_orders(db, 3)
    ctx = relay.RelayContext(
        settings=settings,
        db=Database(settings.database_url, max_size=2),
        http=HttpClient(settings.relay.delivery_timeout_s),
        worker="test@budget",
    )
    try:
        delivered = relay.deliver_events(ctx, [o.fiscal_event_id for o in orders])
    finally:
        ctx.db.close()
        ctx.http.close()
    assert delivered.outcomes == [relay.REINTENTO]
    assert delivered.budget_spent  # a drain job would ring the next one (jobs/deliver.py)
    rows = event_rows(db, [o.fiscal_event_id for o in orders])
    untouched = [r for r in rows.values() if r["attempts"] == 0 and r["claim_token"] is None]
    assert len(untouched) == 2  # never claimed: no lease to wait for, the sweeper wakes them at once


def test_a_queue_rq_cannot_read_does_not_stop_the_sweeper_delivering(db, redis_client, fakes, relay):
    """Redis up, but a queued job whose data rq cannot unpickle: the sweeper delivers the events itself."""
    from tests.relay_fixtures import event_rows, insert_confirmed_orders, wait_until

    wakeup.enqueue(redis_client, relay_settings(), [("00000000-0000-0000-0000-000000000001", None)])
    [job_id] = Queue(relay_settings().relay_queue, connection=redis_client, serializer="json").get_job_ids()
    redis_client.hset(f"rq:job:{job_id}", "data", b"not a pickle")  # rq raises DeserializationError
    order = insert_confirmed_orders(db, 1)[0]
    relay.start_sweepers(1)

    wait_until(
        lambda: event_rows(db, [order.fiscal_event_id])[str(order.fiscal_event_id)]["status"] == "ENTREGADO",
        timeout=10,
        interval=0.1,
        message="the sweeper delivered the event despite the unreadable queue",
    )


def test_the_sweeper_leaves_a_backlog_to_live_workers_that_are_only_behind(db, redis_client, fakes, relay):
    """Wake-ups wait longer than a lease behind a slow destination, but the worker keeps taking them."""
    from tests.relay_fixtures import event_rows, insert_confirmed_orders, wait_until

    fakes.set_mode("fiscal", "timeout_after", delay_s=0.6)  # applied and answered in time, slowly
    ids = [o.fiscal_event_id for o in insert_confirmed_orders(db, 10)]
    for event_id in ids:  # one job each: the last one waits about 6 s in the queue, twice the lease
        wakeup.request_delivery([event_id], connection=redis_client, settings=relay_settings())
    relay.start_workers(1)

    def worker_started() -> bool:  # a worker that has not started yet is not "behind": it is not there
        with db.reading() as conn:
            return bool(conn.execute("SELECT 1 FROM delivery_attempt WHERE event_id = ANY(%s)", [ids]).fetchone())

    wait_until(worker_started, timeout=30, interval=0.05, message="the worker took its first job")
    relay.start_sweepers(1)

    wait_until(
        lambda: all(r["status"] == "ENTREGADO" for r in event_rows(db, ids).values()),
        timeout=30,
        interval=0.1,
        message="the backlog is delivered",
    )
    with db.reading() as conn:
        by = conn.execute(
            "SELECT DISTINCT split_part(worker, '@', 1) AS role FROM delivery_attempt WHERE event_id = ANY(%s)", [ids]
        ).fetchall()
    assert {r["role"] for r in by} == {"worker"}, "the sweeper took events from a live worker"


def test_a_drain_flag_whose_job_is_gone_is_cleared_by_the_next_sweep(db, redis_client, fakes, relay):
    """A drain job deleted from the queue (or its worker killed as it took it) left its flag up."""
    from tests.relay_fixtures import event_rows, insert_confirmed_orders, wait_until

    settings = relay_settings()
    flag = wakeup.pending_key(settings.relay_queue)
    redis_client.set(flag, "1", ex=3600)  # far longer than the test: only a sweep can clear it
    first = insert_confirmed_orders(db, 1)[0]
    wakeup.request_delivery([first.fiscal_event_id], connection=redis_client, settings=settings)
    queue = Queue(settings.relay_queue, connection=redis_client, serializer="json")
    assert queue.count == 0  # the flag silenced the commit-time wake-up
    relay.start_workers(1)
    [sweeper] = relay.start_sweepers(1)
    wait_until(
        lambda: event_rows(db, [first.fiscal_event_id])[str(first.fiscal_event_id)]["status"] == "ENTREGADO",
        timeout=20,
        interval=0.1,
        message="the sweeper found the event",
    )
    wait_until(lambda: not redis_client.exists(flag), timeout=20, interval=0.1, message="the flag was cleared")
    # Commit-time wake-ups ring again: with the sweeper gone, only the next commit's own wake-up can
    # deliver its event.
    relay.stop(sweeper)
    second = insert_confirmed_orders(db, 1)[0]
    wakeup.request_delivery([second.fiscal_event_id], connection=redis_client, settings=settings)
    wait_until(
        lambda: event_rows(db, [second.fiscal_event_id])[str(second.fiscal_event_id)]["status"] == "ENTREGADO",
        timeout=10,
        interval=0.05,
        message="the commit-time wake-up delivered the next event",
    )


def test_a_queued_drain_job_keeps_its_flag(redis_client):
    settings = relay_settings()
    wakeup.request_delivery(["b-1", "b-2"], connection=redis_client, settings=settings)
    waiting = wakeup.queued_wakeups(redis_client, settings)
    assert [w.drains for w in waiting] == [True]
    assert wakeup.clear_unbacked_flag(redis_client, settings, waiting) is False
    assert redis_client.exists(wakeup.pending_key(settings.relay_queue))
