"""After a commit, wake the relay so new events go out at once: one RQ job per event.

The job is only a wake-up (guarantee 9): RQ does not re-run a job whose worker was killed, and Redis may
be down. The lease and the sweeper are what deliver every event (ADR-004), so losing a wake-up only
delays an event and request_delivery never raises. It must only be called after the transaction committed.
"""

from __future__ import annotations

import logging
import math
import os

import redis
from rq import Queue
from rq.job import Job, JobStatus

from nexo.observability import request_id_var
from nexo.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_QUEUE = "nexo-relay"
JOB_FUNCTION = "jobs.deliver.deliver_event"
FAILED_JOB_TTL_S = 3600       # keep a failed wake-up an hour for inspection (rq info); the event itself is safe


def queue_name() -> str:
    """The RQ queue the relay workers listen on (RELAY_QUEUE, default nexo-relay)."""
    return os.environ.get("RELAY_QUEUE", "").strip() or DEFAULT_QUEUE


def enabled() -> bool:
    """False when RELAY_WAKEUP=off: committed events then wait for the sweeper (make bench measures that case)."""
    return os.environ.get("RELAY_WAKEUP", "").strip().lower() != "off"


def job_id(event_id) -> str:
    """One job id per event, so the sweeper can tell whether a wake-up is already waiting in the queue."""
    return f"relay-{event_id}"


def enqueue(connection: redis.Redis, settings: Settings, events: list[tuple[str, str | None]]) -> int:
    """Enqueue one wake-up per (event_id, request_id) in one round trip; raises redis errors."""
    if not events:
        return 0
    # rq counts job timeouts in whole seconds; rounding down keeps the job inside the lease (settings.py).
    timeout = max(1, math.floor(settings.relay.job_timeout_s))
    queue = Queue(queue_name(), connection=connection)
    jobs = [Queue.prepare_data(JOB_FUNCTION, args=(str(event_id), request_id), job_id=job_id(event_id),
                               timeout=timeout, result_ttl=0, failure_ttl=FAILED_JOB_TTL_S,
                               description=f"deliver outbox event {event_id}")
            for event_id, request_id in events]
    queue.enqueue_many(jobs)
    return len(jobs)


def without_queued_wakeup(connection: redis.Redis, event_ids: list) -> list:
    """The event ids that have no wake-up waiting in the queue (lost, finished, failed or never sent)."""
    jobs = Job.fetch_many([job_id(e) for e in event_ids], connection=connection)
    return [e for e, job in zip(event_ids, jobs, strict=True)
            if job is None or job.get_status(refresh=False) != JobStatus.QUEUED]


_fallback: tuple[int, redis.Redis, Settings] | None = None


def _defaults() -> tuple[redis.Redis, Settings]:
    """The app's Redis and settings inside a Flask app; outside one (a script, a test), from the environment."""
    from flask import current_app, has_app_context

    if has_app_context():
        from nexo.extensions import get_redis
        return get_redis(), current_app.config["NEXO_SETTINGS"]
    global _fallback
    if _fallback is None or _fallback[0] != os.getpid():
        from nexo.extensions import make_redis
        settings = Settings.from_env()
        _fallback = (os.getpid(), make_redis(settings.redis_url), settings)
    return _fallback[1], _fallback[2]


def request_delivery(event_ids, *, connection: redis.Redis | None = None, settings: Settings | None = None) -> None:
    """Ask the RQ workers to deliver these committed events now; never raises."""
    event_ids = [str(e) for e in event_ids]
    if not event_ids or not enabled():
        return
    try:
        if connection is None or settings is None:
            default_connection, default_settings = _defaults()
            connection, settings = connection or default_connection, settings or default_settings
        request_id = request_id_var.get()
        enqueue(connection, settings, [(e, None if request_id == "-" else request_id) for e in event_ids])
    except Exception as exc:   # Redis down, or anything else: the sweeper will find these events (ADR-004)
        log.warning("wake-up not sent for %d event(s) (%s: %s); the sweeper will deliver them",
                    len(event_ids), type(exc).__name__, exc)
