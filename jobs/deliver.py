"""RQ job: the wake-up that delivers one outbox event (enqueued by nexo.outbox.wakeup)."""

from __future__ import annotations

import uuid

from nexo.observability import bind_request_id
from nexo.outbox import relay


def deliver_event(event_id: str, request_id: str | None = None) -> str:
    """Deliver the event if it is still due and unclaimed; return the outcome."""
    bind_request_id(request_id)       # the HTTP request that wrote the event, on this job's log lines
    return relay.deliver_event(relay.context("worker"), uuid.UUID(event_id))
