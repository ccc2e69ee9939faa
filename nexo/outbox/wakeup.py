"""After a commit, wake the relay so new events go out at once: one RQ job per batch of events.

A job carries up to EVENTS_PER_JOB event ids (an order's two, or a chunk of a sweep's backlog); the
worker still claims, delivers and records each event on its own (ADR-008).

The job is only a wake-up (guarantee 9): RQ does not re-run a job whose worker was killed, and Redis may
be down. The lease and the sweeper are what deliver every event (ADR-004), so losing a wake-up only
delays an event and Wakeup.request_delivery never raises. It must only be called after the transaction
committed. A Wakeup is built once per process (create_app, the process mains in jobs/) and handed to
the use cases that commit events; nothing here finds Redis or the settings by itself.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

import redis
from rq import Queue, Worker
from rq.job import Job, JobStatus

from nexo.observability import request_id_var
from nexo.settings import Settings

log = logging.getLogger(__name__)

JOB_FUNCTION = "jobs.deliver.deliver_events"
# One job wakes up to this many events (an order's two, a sweep's backlog in chunks): rq's own cost per
# job (about 20 Redis commands and 4-6 ms of worker CPU, measured by make bench) is paid once per
# batch, while each event still gets its own claim, lease and fenced outcome.
EVENTS_PER_JOB = 25
FAILED_JOB_TTL_S = 3600       # keep a failed wake-up an hour for inspection (rq info); the event itself is safe


def job_id(event_id) -> str:
    """One job id per event, so the sweeper can tell whether a wake-up is already waiting in the queue."""
    return f"relay-{event_id}"


def enqueue(connection: redis.Redis, settings: Settings, events: list[tuple[str, str | None]]) -> int:
    """Enqueue wake-ups for (event_id, request_id) pairs, EVENTS_PER_JOB to a job, in one round trip.

    Returns the number of events woken up; raises redis errors.
    """
    if not events:
        return 0
    # rq counts job timeouts in whole seconds; rounding down keeps the job inside the lease (settings.py).
    timeout = settings.relay.job_seconds
    queue = Queue(settings.relay_queue, connection=connection)
    jobs = []
    for request_id, ids in _batches(events):
        jobs.append(Queue.prepare_data(JOB_FUNCTION, args=(ids, request_id), job_id=job_id(ids[0]),
                                       timeout=timeout, result_ttl=0, failure_ttl=FAILED_JOB_TTL_S,
                                       description=f"deliver {len(ids)} outbox event(s) from {ids[0]}"))
    queue.enqueue_many(jobs)
    return len(events)


def _batches(events: list[tuple[str, str | None]]):
    """Group events by the request that wrote them (for the job's log lines), EVENTS_PER_JOB at most."""
    by_request: dict[str | None, list[str]] = {}
    for event_id, request_id in events:
        by_request.setdefault(request_id, []).append(str(event_id))
    for request_id, ids in by_request.items():
        for start in range(0, len(ids), EVENTS_PER_JOB):
            yield request_id, ids[start:start + EVENTS_PER_JOB]


@dataclass(frozen=True)
class QueuedWakeup:
    """A wake-up job still waiting in the queue: which events it covers and since when it waits."""

    job: Job
    enqueued_at: datetime
    event_ids: frozenset[str]


def queued_wakeups(connection: redis.Redis, settings: Settings) -> list[QueuedWakeup]:
    """The wake-up jobs still waiting for a worker (raises redis errors)."""
    queue = Queue(settings.relay_queue, connection=connection)
    waiting = []
    for job in Job.fetch_many(queue.get_job_ids(), connection=connection):
        if job is not None and job.get_status(refresh=False) == JobStatus.QUEUED and job.args:
            enqueued_at = job.enqueued_at or datetime.now(UTC)
            waiting.append(QueuedWakeup(job, enqueued_at, frozenset(str(e) for e in job.args[0])))
    return waiting


def worker_seen_since(connection: redis.Redis, settings: Settings, since: datetime) -> bool:
    """Whether a worker of the relay queue started a job (or registered) since `since` (raises redis errors).

    rq stamps a worker's heartbeat as each job starts, so a worker that is alive and taking jobs, however
    far behind, has one within a lease.
    """
    queue = Queue(settings.relay_queue, connection=connection)
    return any(w.last_heartbeat is not None and w.last_heartbeat >= since
               for w in Worker.all(connection=connection, queue=queue))


def withdraw(connection: redis.Redis, wakeups: list[QueuedWakeup]) -> None:
    """Delete wake-ups nobody picked up: the sweeper delivers their events itself (issue 11)."""
    with connection.pipeline() as pipeline:
        for wakeup in wakeups:
            wakeup.job.delete(pipeline=pipeline)
        pipeline.execute()


class Wakeup:
    """The commit-time wake-up of one process: its Redis client and settings, built once and passed in."""

    def __init__(self, connection: redis.Redis, settings: Settings):
        self.connection = connection
        self.settings = settings

    def request_delivery(self, event_ids) -> None:
        """Ask the RQ workers to deliver these committed events now; never raises."""
        event_ids = [str(e) for e in event_ids]
        if not event_ids or not self.settings.relay_wakeup:
            return
        try:
            request_id = request_id_var.get()
            enqueue(self.connection, self.settings,
                    [(e, None if request_id == "-" else request_id) for e in event_ids])
        except Exception as exc:   # Redis down, or anything else: the sweeper will find these events (ADR-004)
            log.warning("wake-up not sent for %d event(s) (%s: %s); the sweeper will deliver them",
                        len(event_ids), type(exc).__name__, exc)


def request_delivery(event_ids, *, connection: redis.Redis, settings: Settings) -> None:
    """Wakeup(connection, settings).request_delivery(event_ids), for a caller without a Wakeup (tests, scripts)."""
    Wakeup(connection, settings).request_delivery(event_ids)
