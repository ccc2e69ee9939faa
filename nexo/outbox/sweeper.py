"""The relay's safety net: find due PENDIENTE events and get them delivered (guarantee 9, ADR-004, ADR-014).

Due events are those whose wake-up was lost (Redis down when the order committed), whose backoff
expired, or whose lease expired because a worker died mid-delivery. Each sweep, in this order:
1. fails the events whose cycle spent its attempts without an outcome (relay.fail_spent);
2. sends a wake-up job for each due event that no queued job covers, and clears a drain flag whose
   job is gone (it would keep the commit-time wake-ups silent until it expired);
3. delivers, itself, the due events whose wake-up has waited in the queue longer than a lease while
   no worker started a job either (none alive, or all stuck), and withdraws those jobs (every due
   event when one was a drain job, as that job would have); with Redis down it delivers every due event.
So losing Redis, or every worker, only delays events. Any number of sweepers and workers may run
together: claims use FOR UPDATE SKIP LOCKED and outcomes are fenced by the claim token. With several
hosts, steps 2 and 3 (which read the whole wake-up queue in Redis) are done by one sweeper at a time,
the holder of the `relay-sweeper` lease (ADR-019); the others only do step 1 and stand by to take over
within SCAN_LEASE_SWEEPS sweeps of the holder going silent.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from nexo import leases
from nexo.outbox import relay, wakeup
from nexo.outbox import repository as repo

log = logging.getLogger(__name__)

BATCH = 500  # due events looked at per sweep
# A brand-new event's wake-up is normally already on its way: do not send a second one before this.
WAKEUP_GRACE_S = 1.0
SCAN_LEASE = "relay-sweeper"
SCAN_LEASE_SWEEPS = 3  # the scan lease lasts this many sweep intervals: one slow sweep does not lose it


@dataclass(frozen=True)
class SweepResult:
    """What one sweep did."""

    due: int = 0
    enqueued: int = 0
    delivered_here: int = 0
    failed: int = 0


def sweep_once(ctx: relay.RelayContext, ring: wakeup.Wakeup, stop: threading.Event | None = None) -> SweepResult:
    """One pass: fail spent events, wake up due ones, deliver here what no worker picked up in time."""
    cadence = ctx.settings.relay
    failed = relay.fail_spent(ctx)
    grace = min(WAKEUP_GRACE_S, cadence.sweep_interval_s)
    with ctx.db.reading() as conn:
        due = {
            str(r["id"]): r["request_id"]
            for r in repo.due_event_ids(conn, limit=BATCH, max_attempts=cadence.max_attempts, grace_s=grace)
        }
    if not due:
        return SweepResult(failed=failed)
    try:
        waiting = wakeup.queued_wakeups(ring.connection, ctx.settings)
        if wakeup.clear_unbacked_flag(ring.connection, ctx.settings, waiting):
            log.info("sweep: a drain flag without its job was cleared; commit-time wake-ups ring again")
        stale_before = datetime.now(UTC) - timedelta(seconds=cadence.lease_s)
        stale = [w for w in waiting if w.enqueued_at < stale_before]
        if stale and wakeup.worker_seen_since(ring.connection, ctx.settings, stale_before):
            stale = []  # a worker took a job within the lease: it is alive and only behind, not gone
        fresh = [w for w in waiting if w not in stale]
        # A drain job covers every due event (wakeup.py); one that waited a lease is as stuck as any other.
        covered = {e for e in due if any(w.covers(e) for w in fresh)}
        stuck = [e for e in due if e not in covered and any(w.covers(e) for w in stale)]
        enqueued = wakeup.enqueue(
            ring.connection, ctx.settings, [(e, due[e]) for e in due if e not in covered and e not in stuck]
        )
        if stale:
            wakeup.withdraw(ring.connection, ctx.settings, stale)
    except Exception as exc:  # Redis down, or a queue rq cannot read (a job it cannot unpickle): deliver here
        log.warning("sweep: wake-up queue unusable (%s: %s); delivering %d due event(s) here", type(exc).__name__, exc, len(due))
        return SweepResult(due=len(due), failed=failed, delivered_here=deliver_here(ctx, budget_s=cadence.lease_s, stop=stop))
    if enqueued:
        log.info("sweep: %d due event(s), %d wake-up(s) sent", len(due), enqueued)
    delivered = 0
    if any(w.drains for w in stale):
        # A withdrawn drain job also covered events committed within the grace, which `due` skips:
        # drain here as the job would have, or they wait for the next sweep and then another lease.
        log.warning("sweep: a drain wake-up not picked up within %.1f s; delivering every due event here", cadence.lease_s)
        delivered = deliver_here(ctx, budget_s=cadence.lease_s, stop=stop)
    elif stuck:
        # Nobody took these wake-ups within a lease: no worker is alive, or none is free (ADR-014).
        log.warning(
            "sweep: %d wake-up(s) not picked up within %.1f s; delivering %d event(s) here",
            len(stale),
            cadence.lease_s,
            len(stuck),
        )
        delivered = deliver_here(ctx, ids=stuck, budget_s=cadence.lease_s, stop=stop)
    return SweepResult(due=len(due), enqueued=enqueued, delivered_here=delivered, failed=failed)


def deliver_here(
    ctx: relay.RelayContext, *, ids: list | None = None, budget_s: float, stop: threading.Event | None = None
) -> int:
    """Deliver due events (only `ids` when given) from this process, for about budget_s; return how many.

    In growing batches, as a worker's job does (relay.deliver_events): a batch's deliveries run at once,
    so it ends within about one delivery deadline and its leases (lease > delivery timeout) outlive it.
    Once `stop` is set (SIGTERM: a deploy) it claims no more; the batch in flight ends first (ADR-014).
    """
    if ids is not None:
        return len(relay.deliver_events(ctx, list(ids), budget_s=budget_s, stop=stop).outcomes)
    return len(relay.deliver_events(ctx, [], drain=True, budget_s=budget_s, stop=stop).outcomes)


def sweep_or_stand_by(ctx: relay.RelayContext, ring: wakeup.Wakeup, stop: threading.Event | None = None) -> SweepResult | None:
    """A whole sweep when this sweeper holds the scan lease; otherwise only fail spent events (None)."""
    ttl_s = SCAN_LEASE_SWEEPS * ctx.settings.relay.sweep_interval_s
    with ctx.db.transaction() as tx:
        scanning = leases.acquire(tx.conn, SCAN_LEASE, ctx.worker, ttl_s)
        tx.commit()
    if scanning:
        return sweep_once(ctx, ring, stop)
    relay.fail_spent(ctx)
    return None


def run_forever(ctx: relay.RelayContext, ring: wakeup.Wakeup, stop: threading.Event) -> None:
    """Sweep every RELAY_SWEEP_INTERVAL_S until `stop` is set; a failed sweep is logged, never fatal."""
    interval = ctx.settings.relay.sweep_interval_s
    while not stop.is_set():
        started = time.monotonic()
        try:
            sweep_or_stand_by(ctx, ring, stop)
        except Exception:  # the database may be down for a moment: log and try again next interval
            log.exception("sweep failed; retrying in %.1f s", interval)
        stop.wait(max(0.0, interval - (time.monotonic() - started)))
    try:  # a clean stop (a deploy) hands the scan over at once rather than after the lease
        with ctx.db.transaction() as tx:
            leases.release(tx.conn, SCAN_LEASE, ctx.worker)
            tx.commit()
    except Exception as exc:
        log.warning("sweeper: could not release the scan lease (%s); it expires on its own", type(exc).__name__)
