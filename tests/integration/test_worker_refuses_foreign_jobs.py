"""Redis does not decide what code runs (ADR-018): a real `python -m jobs.worker` refuses a pickled job (without
unpickling it) and a JSON job naming any function but the relay's, logs both, and goes on delivering."""

from __future__ import annotations

import os

import pytest
from rq import Queue, Worker

from nexo.outbox import wakeup
from nexo.settings import Settings
from tests.relay_fixtures import event_rows, insert_confirmed_orders, wait_until
from tests.relay_support import RELAY_TEST_ENV

pytestmark = pytest.mark.slow


class RunsCodeWhenUnpickled:
    """What an attacker plants: unpickling it calls os.system (no import of theirs needed)."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def test_a_real_worker_refuses_a_pickled_job_and_a_foreign_function_and_keeps_delivering(
    db, redis_client, fakes, relay, tmp_path
):
    settings = Settings.from_env({**os.environ, **RELAY_TEST_ENV})
    unpickled, foreign = tmp_path / "unpickled", tmp_path / "foreign"
    pickled_queue = Queue(settings.relay_queue, connection=redis_client)  # rq's default serializer: pickle
    pickled = pickled_queue.enqueue(wakeup.JOB_FUNCTION, [RunsCodeWhenUnpickled(f"touch {unpickled}")], None)
    json_queue = Queue(settings.relay_queue, connection=redis_client, serializer="json")
    planted = json_queue.enqueue("os.system", f"touch {foreign}")
    [worker] = relay.start_workers(1)
    wait_until(lambda: Worker.all(queue=json_queue), timeout=30, message="the worker registered")
    log = wait_until(
        lambda: relay.log(worker).count("refused job") >= 2 and relay.log(worker), timeout=20, message="both refused"
    )
    assert f"refused job {pickled.id}" in log and "is not JSON" in log
    assert f"refused job {planted.id}" in log and "'os.system', not an allowed job" in log
    assert not unpickled.exists() and not foreign.exists()
    assert not redis_client.exists(pickled.key) and not redis_client.exists(planted.key)

    orders = insert_confirmed_orders(db, 1)  # the same worker still delivers the relay's own jobs
    ids = [orders[0].fiscal_event_id, orders[0].warehouse_event_id]
    wakeup.request_delivery(ids, connection=redis_client, settings=settings)
    wait_until(lambda: all(r["status"] == "ENTREGADO" for r in event_rows(db, ids).values()), timeout=20, message="delivered")
    assert worker.poll() is None
