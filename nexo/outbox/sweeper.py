"""The relay's safety net: find due PENDIENTE events and get them delivered (guarantee 9, ADR-004).

Due events are those whose wake-up was lost (Redis down when the order committed), whose backoff
expired, or whose lease expired because a worker died mid-delivery. With Redis up the sweeper sends
them a wake-up job (unless one is already waiting); with Redis down it delivers them itself, one claim
at a time, so losing Redis only delays events. Any number of sweepers and workers may run together:
claims use FOR UPDATE SKIP LOCKED and outcomes are fenced by the claim token.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import redis

from nexo.outbox import relay, wakeup
from nexo.outbox import repository as repo

log = logging.getLogger(__name__)

BATCH = 500              # due events looked at per sweep
# A brand-new event's wake-up is normally already on its way: do not send a second one before this.
WAKEUP_GRACE_S = 1.0


@dataclass(frozen=True)
class SweepResult:
    """What one sweep did."""

    due: int = 0
    enqueued: int = 0
    delivered_here: int = 0


def sweep_once(ctx: relay.RelayContext, connection: redis.Redis) -> SweepResult:
    """One pass: enqueue wake-ups for due events, or deliver them here when Redis does not answer."""
    grace = min(WAKEUP_GRACE_S, ctx.settings.relay.sweep_interval_s)
    with ctx.db.reading() as conn:
        due = repo.due_event_ids(conn, limit=BATCH, grace_s=grace)
    if not due:
        return SweepResult()
    try:
        missing = set(wakeup.without_queued_wakeup(connection, [str(r["id"]) for r in due]))
        events = [(str(r["id"]), r["request_id"]) for r in due if str(r["id"]) in missing]
        enqueued = wakeup.enqueue(connection, ctx.settings, events)
        if enqueued:
            log.info("sweep: %d due event(s), %d wake-up(s) sent", len(due), enqueued)
        return SweepResult(due=len(due), enqueued=enqueued)
    except redis.RedisError as exc:
        log.warning("sweep: Redis unavailable (%s); delivering %d due event(s) here", type(exc).__name__, len(due))
        return SweepResult(due=len(due), delivered_here=deliver_here(ctx, budget_s=ctx.settings.relay.lease_s))


def deliver_here(ctx: relay.RelayContext, *, budget_s: float) -> int:
    """Deliver due events from this process, one claim at a time, for at most about budget_s seconds."""
    # One event per claim: a batch claimed at once would see its last leases expire while the first
    # deliveries are still running, and other sweepers would send those events a second time.
    delivered, deadline = 0, time.monotonic() + budget_s
    while time.monotonic() < deadline:
        outcomes = relay.deliver_due(ctx, limit=1)
        if not outcomes:
            break
        delivered += 1
    return delivered


def run_forever(ctx: relay.RelayContext, connection: redis.Redis, stop: threading.Event) -> None:
    """Sweep every RELAY_SWEEP_INTERVAL_S until `stop` is set; a failed sweep is logged, never fatal."""
    interval = ctx.settings.relay.sweep_interval_s
    while not stop.is_set():
        started = time.monotonic()
        try:
            sweep_once(ctx, connection)
        except Exception:    # the database may be down for a moment: log and try again next interval
            log.exception("sweep failed; retrying in %.1f s", interval)
        stop.wait(max(0.0, interval - (time.monotonic() - started)))
