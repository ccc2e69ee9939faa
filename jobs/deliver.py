"""RQ job: the wake-up that delivers a few outbox events (enqueued by nexo.outbox.wakeup).

The relay context (pool, HTTP client) is built once by the worker process's main, jobs/worker.py,
and handed here with use_context; the forking worker builds one in each work horse.
"""

from __future__ import annotations

import logging
import threading
import uuid

from rq import get_current_job
from rq.job import Job

from nexo.observability import bind_request_id
from nexo.outbox import relay, wakeup
from nexo.states import AttemptOutcome

log = logging.getLogger(__name__)
_context: relay.RelayContext | None = None
_stop = threading.Event()


def request_stop() -> None:
    """SIGTERM reached the worker: the job running finishes its attempt in flight and claims no more."""
    _stop.set()


def use_context(ctx: relay.RelayContext) -> None:
    """Install the relay context this process's jobs deliver with (called by jobs/worker.py)."""
    global _context  # noqa: PLW0603 (rq runs jobs by name: the context is this process's, set once by its main)
    _context = ctx


def deliver_events(event_ids: list[str], request_id: str | None = None, drain: bool = False) -> list[AttemptOutcome]:
    """Deliver these events if still due and unclaimed, and with `drain` every other due one; return the outcomes.

    A drain job (the coalesced commit-time wake-up, nexo/outbox/wakeup.py) clears its pending flag before
    its first claim: whatever commits after that rings a job of its own. A drain job whose budget ran out
    with events still due rings the next drain job before it ends.
    """
    if _context is None:
        raise RuntimeError("no relay context: relay jobs run in `python -m jobs.worker`")
    drain_job = _running_job() if drain else None
    bind_request_id(request_id)  # the HTTP request that wrote the events, on this job's log lines
    if drain_job is not None:
        wakeup.clear_pending(drain_job.connection, drain_job.origin)
    delivered = relay.deliver_events(_context, [uuid.UUID(e) for e in event_ids], drain=drain, stop=_stop)
    if drain_job is not None and delivered.budget_spent and not _stop.is_set():
        try:
            wakeup.enqueue_next_drain(drain_job.connection, _context.settings)
        except Exception as exc:  # Redis gone meanwhile: the sweeper finds them (ADR-004)
            log.warning("next drain job not enqueued (%s: %s); the sweeper will deliver the rest", type(exc).__name__, exc)
    return delivered.outcomes


def _running_job() -> Job:
    """The rq job running this call; a drain needs it, as its flag and the next drain are its queue's."""
    job = get_current_job()
    if job is None:
        raise RuntimeError("a drain runs as an rq job (enqueued by nexo.outbox.wakeup), never called directly")
    return job
