"""The outbox relay (guarantee 9, ADR-004): claim with a lease → deliver over HTTP → record, fenced.

Three steps, and never a network call inside a transaction:
1. claim: one short transaction leases due events (FOR UPDATE SKIP LOCKED), stamps a new claim_token,
   counts the attempt and opens its delivery_attempt row;
2. deliver: POST outside any transaction, Idempotency-Key = event id, bounded by the delivery timeout;
3. record: one transaction writes the outcome *only if the claim_token is still ours*; a worker whose
   lease expired and was taken over records only its own attempt, as DESCARTADO_POR_LEASE.
At-least-once: a worker killed between 1 and 3 leaves a lease that expires; the sweeper or another
worker claims the event again and the destination deduplicates by Idempotency-Key.
Every attempt ends, every event ends (guarantee 16, ADR-014): step 2 has a wall-clock deadline, step 1
already counted the attempt, and an event whose cycle spent its attempts without an outcome being
written is failed by fail_spent instead of being claimed again.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from psycopg.rows import DictRow

from nexo.db import Conn, Database
from nexo.observability import bind_request_id
from nexo.outbox import destinations
from nexo.outbox import repository as repo
from nexo.outbox.dead_letter import open_dead_letter
from nexo.outbox.http_client import MAX_CONNECTIONS, HttpClient
from nexo.outbox.registry import DESTINATIONS, route
from nexo.settings import RelayCadence, Settings
from nexo.states import AttemptOutcome
from nexo.telemetry import metrics

log = logging.getLogger(__name__)

# delivery_attempt.outcome values (migration 0003)
ENTREGADO, REINTENTO, FALLIDO = AttemptOutcome.ENTREGADO, AttemptOutcome.REINTENTO, AttemptOutcome.FALLIDO
DESCARTADO, SIN_RESULTADO = AttemptOutcome.DESCARTADO_POR_LEASE, AttemptOutcome.SIN_RESULTADO
RETIRADO = AttemptOutcome.RETIRADO
# Events of one destination claimed and delivered together at most: the lanes of every destination
# together stay within the HTTP client's connections, so no request of a batch spends its deadline
# waiting for a connection (http_client.py).
MAX_BATCH = min(16, MAX_CONNECTIONS // len(DESTINATIONS))


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
        db=Database(
            settings.database_url,
            max_size=2,
            timeout_s=settings.db_pool_timeout_s,
            name="relay",
            connect_kwargs=settings.database.connect_kwargs(),
        ),
        http=HttpClient(settings.relay.delivery_timeout_s),
        worker=f"{role}@{settings.fleet.host_id}:{os.getpid()}",
    )


def backoff_s(attempts: int, base_s: float, cap_s: float) -> float:
    """Seconds before the next try after `attempts` tries: LEAST(cap, base × 2^attempts) (ADR-008)."""
    return min(cap_s, base_s * 2 ** min(attempts, 62))


# What one delivery comes to before its fence is checked: (event, result, outcome, retry delay s, error).
_Plan = tuple[DictRow, destinations.DeliveryResult, AttemptOutcome, float, str | None]


@dataclass(frozen=True)
class Delivered:
    """What deliver_events did: the outcomes of its attempts, and whether it left due events because its
    budget ran out (a stop, or nothing left to claim, is not that)."""

    outcomes: list[AttemptOutcome]
    budget_spent: bool = False


def deliver_events(
    ctx: RelayContext,
    event_ids: list[uuid.UUID | str],
    *,
    drain: bool = False,
    budget_s: float | None = None,
    stop: threading.Event | None = None,
) -> Delivered:
    """Deliver the given events, or (drain) every due one, in batches per destination, within the job's budget.

    Each destination has its own lane, and the lanes run side by side (ADR-010): a destination that
    does not answer only ever holds up its own events, never the other's. In a lane, batches grow from
    one event (1, 2, 4 … MAX_BATCH) while answers come back, and go back to one after a timeout: a
    destination that does not answer costs the lane one deadline and one attempt per batch, not a batch
    of them; each batch goes out concurrently (about one deadline of wall time however large). No batch
    is claimed once the budget is spent, so the last one ends inside the job and its leases (lease >
    job timeout, settings.py) outlive it. Nor once `stop` is set (SIGTERM: a deploy): the batch in flight
    is finished and recorded, so a stop spends no attempt (ADR-014). Events left unclaimed when the budget
    ran out are said so (`budget_spent`): a drain job rings the next one (jobs/deliver.py); otherwise the
    sweeper wakes them up again. `budget_s` is for a caller without a job timeout (the sweeper delivering
    itself).
    """
    cadence = ctx.settings.relay
    if budget_s is None:
        # The last batch started must end inside the job rq really runs: whole seconds (settings.py).
        budget_s = cadence.job_seconds - cadence.attempt_worst_s
    deadline = time.monotonic() + budget_s
    # A drain claims every due event, the given ones included. The lanes compare these with the ids they
    # claim, which come back as UUIDs.
    ids = None if drain else repo.as_uuids(event_ids)
    if ids == []:
        return Delivered([])
    with ThreadPoolExecutor(len(DESTINATIONS), thread_name_prefix="nexo-lane") as lanes:
        runs = [lanes.submit(_lane, ctx, name, ids, deadline, stop) for name in DESTINATIONS]
        lanes_done = [run.result() for run in runs]
    return Delivered(
        [outcome for lane in lanes_done for outcome in lane.outcomes], budget_spent=any(lane.budget_spent for lane in lanes_done)
    )


def _lane(
    ctx: RelayContext, destination: str, ids: list[uuid.UUID] | None, deadline: float, stop: threading.Event | None
) -> Delivered:
    """One destination's batches for deliver_events, until none of its events is due or the budget ends."""
    outcomes: list[AttemptOutcome] = []
    size, started = 1, False
    while True:
        if started and time.monotonic() > deadline:
            log.info("%s: time budget spent with events maybe still due", destination)
            return Delivered(outcomes, budget_spent=True)
        if stop is not None and stop.is_set():
            log.info("%s: stopping; due events left for the sweeper", destination)
            break
        started = True
        claimed, delivered, timed_out = _deliver_batch(ctx, ids=ids, limit=size, destination=destination)
        if not claimed:
            break  # nothing of this destination is due
        outcomes += delivered
        if ids is not None:
            taken = set(claimed)
            ids = [i for i in ids if i not in taken]
        # Grow only while answers come back: after a timeout the next batch is a single probe again — for
        # a destination that is one service; a webhook receiver that times out says nothing of the others.
        size = 1 if timed_out and DESTINATIONS[destination].one_receiver else min(2 * size, MAX_BATCH)
    return Delivered(outcomes)


def deliver_due(
    ctx: RelayContext, *, ids: list[uuid.UUID | str] | None = None, limit: int = 1, destination: str | None = None
) -> list[AttemptOutcome]:
    """Claim up to `limit` due events (only `ids`, only `destination`, when given), deliver them at once, record.

    Each event of the batch keeps its own claim token, lease and attempt row (one claim statement), and
    its outcome is fenced by its own token (one record transaction for the batch).
    """
    return _deliver_batch(ctx, ids=ids, limit=limit, destination=destination)[1]


def _deliver_batch(
    ctx: RelayContext, *, ids: Sequence[uuid.UUID | str] | None, limit: int, destination: str | None
) -> tuple[list[uuid.UUID], list[AttemptOutcome], bool]:
    """deliver_due: (the ids claimed, their outcomes, whether any delivery ran out its deadline)."""
    cadence = ctx.settings.relay
    with ctx.db.transaction() as tx:
        claimed = repo.claim_due(
            tx.conn,
            lease_s=cadence.lease_s,
            worker=ctx.worker,
            limit=limit,
            ids=ids,
            max_attempts=cadence.max_attempts,
            destination=destination,
        )
        tx.commit()
    if not claimed:
        return [], [], False
    # The claim transaction is closed: the HTTP calls below hold no database lock.
    public_only = not ctx.settings.webhook_private_targets
    outgoing = [
        destinations.Outgoing(
            e["event_type"],
            e["id"],
            e["payload"],
            original_withdrawn=e["original_withdrawn"],
            target_url=e["webhook_url"],
            secret=e["webhook_secret"],
            public_only=public_only,
        )
        for e in claimed
    ]
    results = destinations.deliver_all(ctx.http, ctx.settings, outgoing)
    return ([e["id"] for e in claimed], record_all(ctx, claimed, results), any(r.error_class == "Timeout" for r in results))


def record_all(ctx: RelayContext, events: list[DictRow], results: list[destinations.DeliveryResult]) -> list[AttemptOutcome]:
    """Write the outcomes of a batch's deliveries in one transaction, each fenced by its own claim token.

    An event whose lease expired and was taken over by another claimant keeps that claimant's outcome;
    ours is written on our attempt row only, as DESCARTADO_POR_LEASE.
    """
    plans = [_plan(ctx.settings.relay, event, result) for event, result in zip(events, results, strict=True)]
    with ctx.db.transaction() as tx:
        conn = tx.conn
        # The batch's orders first, in id order, before any of their events: a cancel locks its order, then
        # its events (ADR-017), and two workers' batches lock theirs in one order too: no wait in a cycle.
        lock_orders(conn, sorted({e["aggregate_id"] for e in events}))
        kept = repo.record_outcomes(
            conn, [(e["id"], e["claim_token"], outcome, delay, error) for e, _, outcome, delay, error in plans]
        )
        lost = {e["id"]: outcome for e, _, outcome, _, _ in plans if e["id"] not in kept}
        # An event withdrawn while we were delivering it: end our lease, so its cancellation need not wait
        # for it to run out (our outcome is fenced out like any lost lease's).
        repo.release_withdrawn(conn, [(e["id"], e["claim_token"]) for e, _, _, _, _ in plans if e["id"] in lost])
        plans = [(e, r, DESCARTADO if e["id"] in lost else outcome, delay, error) for e, r, outcome, delay, error in plans]
        repo.close_attempts(
            conn, [(e["attempt_id"], outcome, r.http_status, error, r.duration_ms) for e, r, outcome, _, error in plans]
        )
        delivered = [(e, r) for e, r, outcome, _, _ in plans if outcome == ENTREGADO]
        for event_type in sorted({e["event_type"] for e, _ in delivered}):
            route(event_type).record_effects(
                conn, [(e["aggregate_id"], r.effect) for e, r in delivered if e["event_type"] == event_type]
            )
        for e, r, outcome, _, error in plans:
            if outcome == FALLIDO:
                # Guarantee 11: the FALLIDO transition and its durable dead letter commit together.
                open_dead_letter(
                    conn,
                    event_id=e["id"],
                    destination=e["destination"],
                    attempts=e["attempts"],
                    last_error=error,
                    http_status=r.http_status,
                    error_class=r.error_class,
                )
        tx.commit()
    metrics.count_relay_attempts([(e["destination"], str(outcome)) for e, _, outcome, _, _ in plans])
    for e, _, outcome, _, error in plans:
        bind_request_id(e["request_id"])  # the request that wrote the event, on its log line
        if outcome == DESCARTADO:
            # Our lease expired and another claimant took the event: its outcome stands, not ours.
            log.warning(
                "event %s: lease lost before recording %s; outcome discarded (attempt %d)", e["id"], lost[e["id"]], e["attempts"]
            )
        else:
            log.info(
                "event %s (%s) attempt %d: %s%s",
                e["id"],
                e["destination"],
                e["attempts"],
                outcome,
                f" ({error})" if error else "",
            )
    return [outcome for _, _, outcome, _, _ in plans]


def _plan(cadence: RelayCadence, event: DictRow, result: destinations.DeliveryResult) -> _Plan:
    """(event, result, outcome, retry delay s, error) for one delivery, before the fence is checked."""
    error = result.error
    if result.kind == destinations.DELIVERED:
        return event, result, ENTREGADO, 0.0, error
    if result.kind == destinations.NOTHING_TO_UNDO:  # the destination never had the original (ADR-017)
        return event, result, RETIRADO, 0.0, "el destino no había recibido el original: nada que anular"
    # The budget and the backoff count the tries of this cycle: a replay starts a fresh one (ADR-010).
    if result.kind == destinations.TRANSIENT and event["cycle_attempts"] < cadence.max_attempts:
        delay = backoff_s(event["cycle_attempts"], cadence.backoff_base_s, cadence.backoff_cap_s)
        return event, result, REINTENTO, delay, error
    if result.kind == destinations.TRANSIENT:  # RELAY_MAX_ATTEMPTS reached: a person decides now
        error = f"agotados {event['cycle_attempts']} intentos; último error: {error}"
    return event, result, FALLIDO, 0.0, error


def fail_spent(ctx: RelayContext, *, limit: int = 100) -> int:
    """FALLIDO, with its dead letter, for each event whose cycle spent its attempts without an outcome.

    The claim counts an attempt before the POST, so an attempt that never recorded how it ended (worker
    or job killed, recording failed) has been counted all the same; once the cycle's last one is gone
    and its lease expired, nobody will deliver the event again: a person decides (guarantee 16, ADR-014).
    """
    cadence = ctx.settings.relay
    with ctx.db.transaction() as tx:
        spent = repo.lock_spent(tx.conn, max_attempts=cadence.max_attempts, limit=limit)
        for event in spent:
            error = _spent_error(event)
            repo.close_open_attempts(
                tx.conn, event["id"], outcome=SIN_RESULTADO, error="el intento terminó sin que se registrara su resultado"
            )
            repo.mark_spent(tx.conn, event["id"], error=error)
            open_dead_letter(
                tx.conn,
                event_id=event["id"],
                destination=event["destination"],
                attempts=event["attempts"],
                last_error=error,
                http_status=None,
                error_class="NoOutcome" if event["last_open"] else "MaxAttempts",
            )
        tx.commit()
    for event in spent:
        log.warning("event %s (%s): FALLIDO, %s", event["id"], event["destination"], _spent_error(event))
    return len(spent)


def _spent_error(event: DictRow) -> str:
    if event["last_open"]:
        return (
            f"agotados {event['cycle_attempts']} intentos; el último terminó sin registrar resultado"
            " (proceso o tarea detenidos, o el resultado no se pudo escribir)"
        )
    # RELAY_MAX_ATTEMPTS was lowered after the last retry was recorded.
    return f"agotados {event['cycle_attempts']} intentos; último error: {event['last_error']}"


def lock_orders(conn: Conn, order_ids: list[uuid.UUID]) -> None:
    """Lock these orders (FOR NO KEY UPDATE, what their effect writes take anyway) in id order."""
    if order_ids:
        conn.execute("SELECT id FROM orders WHERE id = ANY(%b::uuid[]) ORDER BY id FOR NO KEY UPDATE", [order_ids])
