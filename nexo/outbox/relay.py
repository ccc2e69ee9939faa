"""The outbox relay (guarantee 9, ADR-004): claim with a lease → deliver over HTTP → record, fenced.

Three steps, and never a network call inside a transaction:
1. claim: one short transaction leases due events (FOR UPDATE SKIP LOCKED), stamps a new claim_token,
   counts the attempt and opens its delivery_attempt row;
2. deliver: POST outside any transaction, Idempotency-Key = event id, bounded by the delivery timeout;
3. record: one transaction writes the outcome *only if the claim_token is still ours*; a worker whose
   lease expired and was taken over records only its own attempt, as DESCARTADO_POR_LEASE.
At-least-once: a worker killed between 1 and 3 leaves a lease that expires; the sweeper or another
worker claims the event again and the destination deduplicates by Idempotency-Key.
Every attempt ends, every event ends (issue 11, ADR-014): step 2 has a wall-clock deadline, step 1
already counted the attempt, and an event whose cycle spent its attempts without an outcome being
written is failed by fail_spent instead of being claimed again.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass

from nexo.db import Database
from nexo.observability import bind_request_id
from nexo.outbox import destinations
from nexo.outbox import repository as repo
from nexo.outbox.dead_letter import open_dead_letter
from nexo.outbox.http_client import HttpClient
from nexo.outbox.registry import DESTINATIONS
from nexo.settings import Settings

log = logging.getLogger(__name__)

# delivery_attempt.outcome values (migration 0003)
ENTREGADO, REINTENTO, FALLIDO, DESCARTADO = "ENTREGADO", "REINTENTO", "FALLIDO", "DESCARTADO_POR_LEASE"
SIN_RESULTADO = "SIN_RESULTADO"   # migration 0065: the attempt ended (killed, unwritable) without an outcome
NOTHING = "NADA"       # the event was not due, already delivered, or claimed by someone else


@dataclass
class RelayContext:
    """What a relay process needs: settings, its own pool and HTTP client, and a name for attempt rows."""

    settings: Settings
    db: Database
    http: HttpClient
    worker: str

    def close(self) -> None:
        """Close the pool and the HTTP client."""
        self.http.close()
        self.db.close()


def build_context(settings: Settings, role: str) -> RelayContext:
    """A relay process's context, built once by its main (jobs/worker.py, jobs/sweeper.py) after any fork."""
    return RelayContext(
        settings=settings,
        db=Database(settings.database_url, max_size=2, timeout_s=settings.db_pool_timeout_s, name="relay"),
        http=HttpClient(settings.relay.delivery_timeout_s),
        worker=f"{role}@{socket.gethostname()}:{os.getpid()}")


def backoff_s(attempts: int, base_s: float, cap_s: float) -> float:
    """Seconds before the next try after `attempts` tries: LEAST(cap, base × 2^attempts) (ADR-008)."""
    return min(cap_s, base_s * 2 ** min(attempts, 62))


def deliver_event(ctx: RelayContext, event_id) -> str:
    """Deliver one event if it is due and nobody holds it; return the outcome (or NADA)."""
    outcomes = deliver_due(ctx, ids=[event_id], limit=1)
    return outcomes[0] if outcomes else NOTHING


def deliver_events(ctx: RelayContext, event_ids: list, stop: threading.Event | None = None) -> list[str]:
    """Deliver the given events one claim at a time, stopping before the RQ job timeout could cut one short.

    One claim per event, not one for the batch: a lease taken for the last event while the first ones
    are still being delivered could expire and let a sweeper send it twice. Events left over when the
    time budget runs out, or once `stop` is set (SIGTERM: a deploy), are simply not claimed; the sweeper
    wakes them up again. The attempt in flight is finished, so a stop spends no attempt (ADR-014).
    """
    cadence = ctx.settings.relay
    # The last attempt started must end inside the job rq really runs: whole seconds (settings.py).
    deadline = time.monotonic() + cadence.job_seconds - cadence.attempt_worst_s
    outcomes = []
    for event_id in event_ids:
        if outcomes and time.monotonic() > deadline:
            log.info("job time budget spent; %d event(s) left for the sweeper", len(event_ids) - len(outcomes))
            break
        if stop is not None and stop.is_set():
            log.info("stopping; %d event(s) left for the sweeper", len(event_ids) - len(outcomes))
            break
        outcomes.append(deliver_event(ctx, event_id))
    return outcomes


def deliver_due(ctx: RelayContext, *, ids=None, limit: int = 1) -> list[str]:
    """Claim up to `limit` due events (only `ids` when given), deliver each and record its outcome."""
    cadence = ctx.settings.relay
    with ctx.db.transaction() as tx:
        claimed = repo.claim_due(tx.conn, lease_s=cadence.lease_s, worker=ctx.worker, limit=limit, ids=ids,
                                 max_attempts=cadence.max_attempts)
        tx.commit()
    outcomes = []
    for event in claimed:     # the claim transaction is closed: the HTTP calls below hold no database lock
        bind_request_id(event["request_id"])
        result = destinations.deliver(ctx.http, ctx.settings, event["destination"], event["id"], event["payload"])
        outcomes.append(record(ctx, event, result))
    return outcomes


def record(ctx: RelayContext, event: dict, result: destinations.DeliveryResult) -> str:
    """Write the outcome of one delivery in one transaction, fenced by the claim token."""
    cadence = ctx.settings.relay
    with ctx.db.transaction() as tx:
        conn = tx.conn
        error = result.error
        if result.kind == destinations.DELIVERED:
            outcome, row = ENTREGADO, repo.mark_delivered(conn, event["id"], event["claim_token"])
        # The budget and the backoff count the tries of this cycle: a replay starts a fresh one (issue 6).
        elif result.kind == destinations.TRANSIENT and event["cycle_attempts"] < cadence.max_attempts:
            delay = backoff_s(event["cycle_attempts"], cadence.backoff_base_s, cadence.backoff_cap_s)
            outcome, row = REINTENTO, repo.mark_retry(conn, event["id"], event["claim_token"], delay_s=delay,
                                                      error=error)
        else:
            if result.kind == destinations.TRANSIENT:   # RELAY_MAX_ATTEMPTS reached: a person decides now
                error = f"agotados {event['cycle_attempts']} intentos; último error: {error}"
            outcome, row = FALLIDO, repo.mark_failed(conn, event["id"], event["claim_token"], error=error)
        if row is None:
            # Our lease expired and another claimant took the event: its outcome stands, not ours.
            repo.close_attempt(conn, event["attempt_id"], outcome=DESCARTADO, http_status=result.http_status,
                               error=error, duration_ms=result.duration_ms)
            tx.commit()
            log.warning("event %s: lease lost before recording %s; outcome discarded (attempt %d)",
                        event["id"], outcome, event["attempts"])
            return DESCARTADO
        repo.close_attempt(conn, event["attempt_id"], outcome=outcome, http_status=result.http_status,
                           error=error, duration_ms=result.duration_ms)
        if outcome == ENTREGADO:
            _apply_effect(conn, event, result.effect)
        elif outcome == FALLIDO:
            # Guarantee 11: the FALLIDO transition and its durable dead letter commit together.
            open_dead_letter(conn, event_id=event["id"], destination=event["destination"],
                             attempts=event["attempts"], last_error=error, http_status=result.http_status,
                             error_class=result.error_class)
        tx.commit()
    log.info("event %s (%s) attempt %d: %s%s", event["id"], event["destination"], event["attempts"], outcome,
             f" ({error})" if error else "")
    return outcome


def fail_spent(ctx: RelayContext, *, limit: int = 100) -> int:
    """FALLIDO, with its dead letter, for each event whose cycle spent its attempts without an outcome.

    The claim counts an attempt before the POST, so an attempt that never recorded how it ended (worker
    or job killed, recording failed) has been counted all the same; once the cycle's last one is gone
    and its lease expired, nobody will deliver the event again: a person decides (issue 11, ADR-014).
    """
    cadence = ctx.settings.relay
    with ctx.db.transaction() as tx:
        spent = repo.lock_spent(tx.conn, max_attempts=cadence.max_attempts, limit=limit)
        for event in spent:
            error = _spent_error(event)
            repo.close_open_attempts(tx.conn, event["id"], outcome=SIN_RESULTADO,
                                     error="el intento terminó sin que se registrara su resultado")
            repo.mark_spent(tx.conn, event["id"], error=error)
            open_dead_letter(tx.conn, event_id=event["id"], destination=event["destination"],
                             attempts=event["attempts"], last_error=error, http_status=None,
                             error_class="NoOutcome" if event["last_open"] else "MaxAttempts")
        tx.commit()
    for event in spent:
        log.warning("event %s (%s): FALLIDO, %s", event["id"], event["destination"], _spent_error(event))
    return len(spent)


def _spent_error(event: dict) -> str:
    if event["last_open"]:
        return (f"agotados {event['cycle_attempts']} intentos; el último terminó sin registrar resultado"
                " (proceso o tarea detenidos, o el resultado no se pudo escribir)")
    # RELAY_MAX_ATTEMPTS was lowered after the last retry was recorded.
    return f"agotados {event['cycle_attempts']} intentos; último error: {event['last_error']}"


def _apply_effect(conn, event: dict, effect: str) -> None:
    DESTINATIONS[event["destination"]].record_effect(conn, event["aggregate_id"], effect)
