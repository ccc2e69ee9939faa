"""An RQ worker for the relay's wake-up jobs (`python -m jobs.worker`).

Settings are validated first, so an inconsistent relay cadence stops start-up with a clear message
(check_relay_cadence). The worker class is rq's non-forking SimpleWorker by default: measured in
ADR-008, forking a work horse per job costs a new Postgres pool and HTTP session per event and was
several times slower, while the relay's jobs are short and bounded by their own timeouts.
RELAY_WORKER_CLASS=fork selects rq's forking Worker (to measure again, or to isolate leaky jobs).
If Redis goes away the worker keeps retrying instead of exiting; the sweeper covers the meantime.

Redis is not trusted to say what code runs (ADR-018): jobs are JSON (rq's JSONSerializer, so a pickled
job cannot even be read, let alone unpickle code) and a worker runs only the functions of ALLOWED_JOBS;
anything else is refused, logged and deleted without being imported or called.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import uuid

import redis
from rq import SimpleWorker, Worker
from rq.exceptions import DeserializationError

from jobs import deliver
from nexo.extensions import redis_for
from nexo.observability import configure_logging
from nexo.outbox import relay, wakeup
from nexo.settings import Settings, SettingsError, start_up_warnings
from nexo.telemetry import exporter

log = logging.getLogger("jobs.worker")
WORKER_CLASSES = {"simple": SimpleWorker, "fork": Worker}
_stopping = False


def _relay_worker(base, settings: Settings):
    class RelayWorker(base):
        """rq's worker that also remembers a SIGTERM/SIGINT, so a Redis outage is not mistaken for one."""

        # rq backs off up to 60 s between reconnections; after an outage, wake-ups should flow again
        # within a couple of seconds (the sweeper delivered in the meantime).
        max_connection_wait_time = 2.0

        def request_stop(self, signum, frame):
            global _stopping  # noqa: PLW0603 (one flag per worker process, read by its main loop)
            _stopping = True
            # SimpleWorker runs the job in this process: tell it to claim no further event, so the stop
            # waits for one attempt, not a whole batch (ADR-014). A forking worker's horse ends with its job.
            deliver.request_stop()
            super().request_stop(signum, frame)

        def execute_job(self, job, queue):
            try:
                func_name = job.func_name
            except DeserializationError:
                func_name = None
            if func_name not in ALLOWED_JOBS:
                refuse(job, func_name)
                return
            super().execute_job(job, queue)

        def main_work_horse(self, job, queue):
            # Only the forking worker gets here, in the new child: a pool and an HTTP client (whose loop
            # thread does not survive a fork) of its own, built before the job runs.
            deliver.use_context(relay.build_context(settings, "worker"))
            super().main_work_horse(job, queue)

    return RelayWorker


# The only functions a relay worker runs, whatever a job in Redis names (ADR-018).
ALLOWED_JOBS = frozenset({wakeup.JOB_FUNCTION})


def refuse(job, func_name: str | None) -> None:
    """Log a job that is not one of ours and delete it, never importing or calling what it names."""
    what = "is not JSON (a pickled job?)" if func_name is None else f"names {func_name[:200]!r}, not an allowed job"
    log.error("refused job %s from queue %s: it %s; deleted without running it", job.id, job.origin, what)
    try:
        job.connection.delete(job.key)
    except redis.RedisError as exc:
        log.warning("refused job %s not deleted (%s)", job.id, type(exc).__name__)


def main() -> int:
    """Validate settings, then work the relay queue until SIGTERM/SIGINT, riding out Redis outages."""
    configure_logging()
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"nexo worker: configuration error: {exc}", file=sys.stderr)
        return 2
    for warning in start_up_warnings(settings):  # README, Running it safely: said by every production program
        log.warning("start-up warning: %s", warning)
    kind, queue = settings.relay_worker_class, settings.relay_queue
    if kind == "simple":
        deliver.use_context(relay.build_context(settings, "worker"))  # once, for every job of this process
    worker_class = _relay_worker(WORKER_CLASSES[kind], settings)
    port = settings.fleet.relay_metrics_port
    if port:  # a worker host's own counters (ADR-019); one relay process of the host serves them
        exporter.serve_host_metrics(settings.fleet.web_bind, port, settings.prometheus_multiproc_dir, threading.Event())
    # No socket timeout: rq's blocking pop waits longer than any fail-fast one (it sets its own).
    connection = redis_for(settings, socket_timeout=None)
    log.info(
        "relay worker (%s) on queue %s; job timeout %.1f s, lease %.1f s",
        kind,
        queue,
        settings.relay.job_timeout_s,
        settings.relay.lease_s,
    )
    while not _stopping:
        # A fresh name each time: a worker that lost Redis could not deregister its old one.
        name = f"relay-{settings.fleet.host_id}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        try:
            worker_class([queue], connection=connection, name=name, serializer=wakeup.SERIALIZER).work(logging_level="INFO")
        except (redis.RedisError, ValueError) as exc:
            log.warning("worker %s: Redis unavailable (%s); retrying in 1 s", name, type(exc).__name__)
        if not _stopping:
            time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
