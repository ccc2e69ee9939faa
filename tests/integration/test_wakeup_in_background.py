"""The web tier's wake-up rung from a thread of its own: the order's answer never waits for Redis, the
commits of one moment share one ring, and a forked process (a gunicorn worker) rings from its own thread."""

from __future__ import annotations

import logging
import os
import socket
import threading

from rq import Queue

from nexo.outbox import wakeup
from nexo.redis_client import connect as nexo_redis
from tests.relay_fixtures import relay_settings


def _queue(redis_client) -> Queue:
    return Queue(relay_settings().relay_queue, connection=redis_client, serializer="json")


def test_commits_handed_over_together_are_rung_by_one_drain_job(redis_client):
    ring = wakeup.Wakeup(redis_client, relay_settings(), in_background=True)
    threads = [threading.Thread(target=ring.request_delivery, args=([f"t{n}-fiscal", f"t{n}-warehouse"],)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ring.flush(timeout_s=10)
    jobs = _queue(redis_client).jobs
    # However the 16 hand-overs fell between the thread's rings, the flag lets one drain job through.
    assert len(jobs) == 1 and jobs[0].kwargs == {"drain": True}
    assert redis_client.exists(wakeup.pending_key(relay_settings().relay_queue))


def test_an_answer_does_not_wait_for_a_redis_that_does_not_answer(caplog):
    # A Redis that accepts the connection and never replies (a partition, a stuck server): the
    # synchronous wake-up held the request for the client's read timeout, once per retry.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    port = silent.getsockname()[1]
    # Nexo's own client (retries included), with a short read timeout to keep the test short.
    connection = nexo_redis(f"redis://127.0.0.1:{port}/0", socket_timeout=0.5)
    ring = wakeup.Wakeup(connection, relay_settings(), in_background=True)
    try:
        with caplog.at_level(logging.WARNING, logger="nexo.outbox.wakeup"):
            ring.request_delivery(["silent-fiscal"])
            # The hand-over returned while the thread is still waiting on the silent server.
            assert ring.flush(timeout_s=0.3) is False
            ring.request_delivery(["silent-warehouse"])
            assert ring.flush(timeout_s=15)
        warnings = [r.getMessage() for r in caplog.records if "wake-up not sent" in r.getMessage()]
        assert warnings and all("the sweeper will deliver them" in w for w in warnings)
    finally:
        connection.close()
        silent.close()


def test_a_forked_process_rings_from_its_own_thread(redis_client):
    settings = relay_settings()
    ring = wakeup.Wakeup(redis_client, settings, in_background=True)
    ring.request_delivery(["parent-fiscal"])  # the parent's thread exists now; a fork does not copy it
    assert ring.flush(timeout_s=10)
    redis_client.delete(wakeup.pending_key(settings.relay_queue))  # as a drain job does when it starts
    pid = os.fork()
    if pid == 0:  # the child: a gunicorn worker forked after create_app built the Wakeup
        try:
            redis_client.connection_pool.reset()  # what redis-py does itself on a pid change; explicit here
            ring.request_delivery(["child-fiscal"])
            os._exit(0 if ring.flush(timeout_s=10) else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [job.args[0] for job in _queue(redis_client).jobs] == [["parent-fiscal"], ["child-fiscal"]]
