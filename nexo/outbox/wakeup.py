"""After a commit, wake the relay so new events go out at once: one RQ job for many commits.

The commit-time wake-up is coalesced (ADR-008): Wakeup.request_delivery enqueues a *drain* job only when
none is already waiting, marked by a Redis flag set with SET NX. The job clears the flag before its first
claim, then delivers its events and every other due one until none is left or its time budget ends; a
job whose budget ran out with events still due rings the next drain job itself (enqueue_next_drain). So
an event committed while the flag is set is committed before the job's first claim and gets drained,
and one committed after the flag was cleared rings a new job: no wake-up is lost between the two.
The sweeper's own wake-ups (enqueue) still carry explicit event ids, up to EVENTS_PER_JOB to a job.
Either way the worker claims events in batches, each event with its own claim token, lease and fenced
outcome (nexo/outbox/relay.py).

The job is only a wake-up (guarantee 9): RQ does not re-run a job whose worker was killed, and Redis may
be down. The lease and the sweeper are what deliver every event (ADR-004), so losing a wake-up only
delays an event and Wakeup.request_delivery never raises. It must only be called after the transaction
committed. A Wakeup is built once per process (create_app, the process mains in jobs/) and handed to
the use cases that commit events; nothing here finds Redis or the settings by itself.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import redis
from rq import Queue, Worker
from rq.exceptions import DeserializationError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from nexo.observability import request_id_var
from nexo.settings import Settings

log = logging.getLogger(__name__)

JOB_FUNCTION = "jobs.deliver.deliver_events"
# Jobs are JSON, never pickle: whoever can write to Redis must not be able to run code in a worker, which
# holds SECRET_KEY and DATABASE_URL (ADR-018). jobs/worker.py reads them with the same serializer and
# runs JOB_FUNCTION only.
SERIALIZER = JSONSerializer


def relay_queue(connection: redis.Redis, settings: Settings) -> Queue:
    """The relay's RQ queue, with the JSON serializer."""
    return Queue(settings.relay_queue, connection=connection, serializer=SERIALIZER)


# One job wakes up to this many events (an order's two, a sweep's backlog in chunks): rq's own cost per
# job (its Redis bookkeeping) and the lanes' first small batches are paid once per job, while each event
# still gets its own claim, lease and fenced outcome. 25 a job left that overhead most of a worker's CPU
# per event once delivery itself got cheap (ADR-008).
EVENTS_PER_JOB = 100
FAILED_JOB_TTL_S = 3600  # keep a failed wake-up an hour for inspection (rq info); the event itself is safe


def pending_key(queue_name: str) -> str:
    """The Redis key whose presence says a drain job is waiting in that relay queue (one flag per queue)."""
    return f"nexo:relay-drain-pending:{queue_name}"


def clear_pending(connection: redis.Redis, queue_name: str) -> None:
    """Called by a drain job as it starts, before its first claim (see the module docstring)."""
    connection.delete(pending_key(queue_name))


def job_id(event_id) -> str:
    """One job id per event, so the sweeper can tell whether a wake-up is already waiting in the queue."""
    return f"relay-{event_id}"


def enqueue(connection: redis.Redis, settings: Settings, events: list[tuple[str, str | None]]) -> int:
    """Enqueue wake-ups for (event_id, request_id) pairs, EVENTS_PER_JOB to a job, in one round trip.

    Returns the number of events woken up; raises redis errors.
    """
    if not events:
        return 0
    relay_queue(connection, settings).enqueue_many(
        [_job_data(settings, ids, request_id, drain=False) for request_id, ids in _batches(events)]
    )
    return len(events)


def enqueue_drain(connection: redis.Redis, settings: Settings, event_ids: list[str], request_id: str | None) -> bool:
    """Enqueue a drain job for these just-committed events unless one is already waiting; True if enqueued.

    Raises what enqueuing raised (a flag set for a job that could not be enqueued is taken back first).
    """
    # The flag lives at most a lease: the sweeper withdraws a drain job that waited that long (ADR-014).
    if not connection.set(pending_key(settings.relay_queue), "1", nx=True, ex=max(1, math.ceil(settings.relay.lease_s))):
        return False  # a drain job is waiting: it has not claimed yet, so it will find these events
    try:
        relay_queue(connection, settings).enqueue_many([_job_data(settings, event_ids, request_id, drain=True)])
    except Exception:
        # Whatever failed (Redis, rq, a timeout after the job was written), take the flag back, or every
        # commit of the next lease coalesces into a job that may not exist. Best effort: if Redis does
        # not answer, the flag expires by itself and the sweeper delivers meanwhile (ADR-004).
        try:
            connection.delete(pending_key(settings.relay_queue))
        except Exception as exc:
            log.warning("drain flag not cleared (%s: %s); it expires within a lease", type(exc).__name__, exc)
        raise
    return True


def enqueue_next_drain(connection: redis.Redis, settings: Settings) -> bool:
    """A drain job whose budget ran out with events still due rings the next one, unless one waits already.

    Without it those events would wait for the sweeper (a sweep interval, or a lease) although a worker
    is right there. Raises what enqueuing raised.
    """
    return enqueue_drain(connection, settings, [], None)


def _job_data(settings: Settings, ids: list[str], request_id: str | None, *, drain: bool):
    # rq counts job timeouts in whole seconds; rounding down keeps the job inside the lease (settings.py).
    what = f"{len(ids)} outbox event(s) from {ids[0]}" if ids else "the due outbox events"
    return Queue.prepare_data(
        JOB_FUNCTION,
        args=(ids, request_id),
        kwargs={"drain": True} if drain else None,
        job_id=job_id(ids[0]) if ids else f"relay-drain-{uuid.uuid4()}",
        timeout=settings.relay.job_seconds,
        result_ttl=0,
        failure_ttl=FAILED_JOB_TTL_S,
        description=f"deliver {what}" + (" and every other due one" if ids and drain else ""),
    )


def _batches(events: list[tuple[str, str | None]]):
    """Group events by the request that wrote them (for the job's log lines), EVENTS_PER_JOB at most."""
    by_request: dict[str | None, list[str]] = {}
    for event_id, request_id in events:
        by_request.setdefault(request_id, []).append(str(event_id))
    for request_id, ids in by_request.items():
        for start in range(0, len(ids), EVENTS_PER_JOB):
            yield request_id, ids[start : start + EVENTS_PER_JOB]


@dataclass(frozen=True)
class QueuedWakeup:
    """A wake-up job still waiting in the queue: which events it covers and since when it waits."""

    job: Job
    enqueued_at: datetime
    event_ids: frozenset[str]
    drains: bool = False  # a drain job: it covers every due event, not only its own ids

    def covers(self, event_id: str) -> bool:
        """Whether this job, once a worker takes it, will claim that event (if still due)."""
        return self.drains or event_id in self.event_ids


def queued_wakeups(connection: redis.Redis, settings: Settings) -> list[QueuedWakeup]:
    """The wake-up jobs still waiting for a worker (raises redis errors)."""
    queue = relay_queue(connection, settings)
    waiting = []
    for job in Job.fetch_many(queue.get_job_ids(), connection=connection, serializer=SERIALIZER):
        if job is None or job.get_status(refresh=False) != JobStatus.QUEUED or not _readable(job):
            continue  # gone, taken, or not one of ours (a worker refuses it: jobs/worker.py)
        if job.args:
            enqueued_at = job.enqueued_at or datetime.now(UTC)
            waiting.append(
                QueuedWakeup(
                    job, enqueued_at, frozenset(str(e) for e in job.args[0]), drains=bool((job.kwargs or {}).get("drain"))
                )
            )
    return waiting


def _readable(job: Job) -> bool:
    try:
        return job.func_name == JOB_FUNCTION
    except DeserializationError:
        return False


def worker_seen_since(connection: redis.Redis, settings: Settings, since: datetime) -> bool:
    """Whether a worker of the relay queue started a job (or registered) since `since` (raises redis errors).

    rq stamps a worker's heartbeat as each job starts, so a worker that is alive and taking jobs, however
    far behind, has one within a lease.
    """
    queue = relay_queue(connection, settings)
    return any(w.last_heartbeat is not None and w.last_heartbeat >= since for w in Worker.all(connection=connection, queue=queue))


def clear_unbacked_flag(connection: redis.Redis, settings: Settings, waiting: list[QueuedWakeup]) -> bool:
    """Clear the drain flag when no queued drain job backs it (the sweeper); True if one was cleared.

    Its job is gone without having cleared it: deleted from the queue (an operator's `rq empty`), or its
    worker killed between taking the job and starting it. Until the flag expired (a lease), every
    commit-time wake-up would be skipped and new events would wait for a sweep. A flag set by a
    commit that has not enqueued its job yet may be cleared too: the next commit then rings a second
    drain job, which finds nothing left to claim (raises redis errors).
    """
    if any(w.drains for w in waiting):
        return False
    return bool(connection.delete(pending_key(settings.relay_queue)))


def withdraw(connection: redis.Redis, settings: Settings, wakeups: list[QueuedWakeup]) -> None:
    """Delete wake-ups nobody picked up: the sweeper delivers their events itself (ADR-014).

    Withdrawing a drain job also clears its flag, so the next commit rings a fresh one.
    """
    with connection.pipeline() as pipeline:
        for wakeup in wakeups:
            wakeup.job.delete(pipeline=pipeline)
        if any(w.drains for w in wakeups):
            pipeline.delete(pending_key(settings.relay_queue))
        pipeline.execute()


class Wakeup:
    """The commit-time wake-up of one process: its Redis client and settings, built once and passed in.

    `in_background` (the web tier's, nexo/outbox/__init__.py): request_delivery only hands the ids to one
    thread of the process, which rings Redis for every commit handed to it since its last ring. The
    request then waits for no Redis round trip (a Redis that does not answer costs its thread the
    connect timeout, not each order), and the commits of one moment share one SET NX. Coalescing keeps
    the rule above: the thread rings after the commits it covers, so a drain job either had not claimed
    yet or is rung anew (ADR-008). A wake-up still in that thread when the process dies is lost like one
    Redis never got: the sweeper delivers its events (ADR-004).
    """

    def __init__(self, connection: redis.Redis, settings: Settings, *, in_background: bool = False):
        self.connection = connection
        self.settings = settings
        self._ringer = _Ringer(self._ring) if in_background else None

    def request_delivery(self, event_ids) -> None:
        """Ask the RQ workers to deliver these committed events now; never raises."""
        event_ids = [str(e) for e in event_ids]
        if not event_ids or not self.settings.relay_wakeup:
            return
        current = request_id_var.get()
        request_id = None if current == "-" else current
        if self._ringer is None:
            self._ring(event_ids, request_id)
        else:
            self._ringer.hand_over(event_ids, request_id)

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until every wake-up handed over so far has been rung (tests, shutdown); True if it was."""
        return True if self._ringer is None else self._ringer.flush(timeout_s)

    def _ring(self, event_ids: list[str], request_id: str | None) -> None:
        try:
            enqueue_drain(self.connection, self.settings, event_ids, request_id)
        except Exception as exc:  # Redis down, or anything else: the sweeper will find these events (ADR-004)
            log.warning(
                "wake-up not sent for %d event(s) (%s: %s); the sweeper will deliver them",
                len(event_ids),
                type(exc).__name__,
                exc,
            )


class _Ringer:
    """The one thread of a process that rings the relay for the commits handed to it (Wakeup, in_background).

    Started by the first hand-over in each process (gunicorn forks its workers after create_app, and a
    thread does not survive a fork). Each ring covers every id handed over before it (at most
    EVENTS_PER_JOB of them name the job; a drain job claims every due event anyway).
    """

    def __init__(self, ring):
        self._ring = ring
        self._lock = threading.Lock()
        self._handed = threading.Condition(self._lock)
        self._pending: list[tuple[list[str], str | None]] = []
        self._ringing = False
        self._pid: int | None = None

    def hand_over(self, event_ids: list[str], request_id: str | None) -> None:
        with self._lock:
            self._pending.append((event_ids, request_id))
            if self._pid != os.getpid():
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="nexo-wakeup", daemon=True).start()
                # A worker stopped by a deploy rings what it still holds before it exits (briefly: the
                # sweeper covers the rest).
                atexit.register(self.flush, 1.0)
            self._handed.notify_all()

    def flush(self, timeout_s: float) -> bool:
        with self._lock:
            return self._handed.wait_for(lambda: not self._pending and not self._ringing, timeout_s)

    def _run(self) -> None:
        while True:
            with self._lock:
                self._handed.wait_for(lambda: self._pending)
                batch, self._pending, self._ringing = self._pending, [], True
            try:
                event_ids = [event_id for ids, _ in batch for event_id in ids]
                self._ring(event_ids[:EVENTS_PER_JOB], batch[0][1])  # the first commit's request names the job
            except BaseException:  # _ring never raises; were it to, the next hand-over still finds a thread
                log.exception("wake-up thread stopped")
                with self._lock:
                    self._pid, self._ringing = None, False
                    self._handed.notify_all()
                return
            with self._lock:
                self._ringing = False
                self._handed.notify_all()


def request_delivery(event_ids, *, connection: redis.Redis, settings: Settings) -> None:
    """Wakeup(connection, settings).request_delivery(event_ids), for a caller without a Wakeup (tests, scripts)."""
    Wakeup(connection, settings).request_delivery(event_ids)
