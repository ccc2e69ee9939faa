"""RQ job: the wake-up that delivers a few outbox events (enqueued by nexo.outbox.wakeup)."""

from __future__ import annotations

import uuid

from nexo.observability import bind_request_id
from nexo.outbox import relay


def deliver_events(event_ids: list[str], request_id: str | None = None) -> list[str]:
    """Deliver each event that is still due and unclaimed, one claim at a time; return the outcomes."""
    bind_request_id(request_id)       # the HTTP request that wrote the events, on this job's log lines
    return relay.deliver_events(relay.context("worker"), [uuid.UUID(e) for e in event_ids])
