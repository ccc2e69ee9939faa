"""The wake-up: events woken up in batches, and the sweeper can tell which events a queued job covers."""

from rq import Queue

from nexo.outbox import wakeup
from tests.relay_fixtures import relay_settings


def test_wakeups_are_batched_and_every_event_is_covered(redis_client):
    events = [f"00000000-0000-0000-0000-{n:012d}" for n in range(60)]
    woken = wakeup.enqueue(redis_client, relay_settings(), [(e, "req-1") for e in events])
    queue = Queue(wakeup.queue_name(), connection=redis_client)
    assert woken == 60
    assert queue.count == 3                  # 25 + 25 + 10: rq's cost is paid per job, not per event
    assert wakeup.without_queued_wakeup(redis_client, events + ["not-woken"]) == ["not-woken"]


def test_an_orders_two_events_share_one_job(redis_client):
    wakeup.request_delivery(["a-1", "a-2"], connection=redis_client, settings=relay_settings())
    queue = Queue(wakeup.queue_name(), connection=redis_client)
    assert queue.count == 1
    assert queue.jobs[0].args[0] == ["a-1", "a-2"]
