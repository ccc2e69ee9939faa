"""SQL for writing outbox events. The caller owns the transaction (ADR-004)."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable
from datetime import datetime

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from nexo.db import Conn, array_literal
from nexo.outbox import registry
from nexo.outbox.partitions import LIVE_ATTEMPTS, LIVE_EVENTS, settled_since  # the relay works in these (ADR-019)
from nexo.outbox.storable import storable_text
from nexo.states import AttemptOutcome, EventStatus, sql_constant

# The relay's queue is read through the live partition's partial index outbox_pendientes_idx (WHERE status =
# 'PENDIENTE', migration 0700) and the purge of delivered events through outbox_delivered_idx (WHERE status =
# 'ENTREGADO'): those predicates keep a constant (nexo.states.sql_constant says why); every other state is bound.
PENDIENTE = sql_constant(EventStatus.PENDIENTE)
ENTREGADO = sql_constant(EventStatus.ENTREGADO)


def add_events(
    conn: Conn,
    *,
    order_id: uuid.UUID,
    event_types: list[str],
    payload: dict,
    request_id: str | None = None,
    depends_on: list[uuid.UUID | None] | None = None,
) -> list[uuid.UUID]:
    """Insert one PENDIENTE event per type, all with this payload, in one statement, in the caller's transaction;
    return their ids (each the event's Idempotency-Key), in order. `depends_on` names, per event, the
    original a cancellation must not overtake (ADR-017)."""
    event_ids = [uuid.uuid4() for _ in event_types]
    conn.execute(
        f"INSERT INTO {LIVE_EVENTS} (id, aggregate_id, event_type, destination, payload, request_id, depends_on)"
        " SELECT id, %s, event_type, destination, %s, %s, depends_on"
        "   FROM unnest(%s::uuid[], %s::text[], %s::text[], %s::uuid[]) AS e(id, event_type, destination, depends_on)",
        [
            order_id,
            Jsonb(payload),
            request_id,
            array_literal(event_ids),
            array_literal(event_types),
            array_literal(registry.for_event(t).name for t in event_types),
            array_literal(depends_on or [None] * len(event_types)),
        ],
    )
    return event_ids


def add_event(
    conn: Conn, *, order_id: uuid.UUID, event_type: str, payload: dict, request_id: str | None, depends_on: uuid.UUID | None
) -> uuid.UUID:
    """Insert one PENDIENTE event (a cancellation naming its original, ADR-017) in the caller's transaction."""
    return add_events(
        conn, order_id=order_id, event_types=[event_type], payload=payload, request_id=request_id, depends_on=[depends_on]
    )[0]


def lock_order_events(conn: Conn, order_id: uuid.UUID, *, entered_at: datetime) -> list[DictRow]:
    """The order's events, locked in id order (the relay locks a batch's events in id order too), with what a
    cancel needs to know of each: delivered, withdrawable, or possibly at its destination already.
    `entered_at` is the order's created_at (settled_since)."""
    return conn.execute(
        """
        SELECT e.id, e.event_type, e.destination, e.status, e.attempts, e.depends_on,
               (e.locked_until IS NOT NULL AND e.locked_until >= now()) AS in_flight
          FROM outbox_event e
         WHERE e.aggregate_id = %s AND e.settled_on >= %s
         ORDER BY e.id
           FOR UPDATE
        """,
        [order_id, settled_since(entered_at)],
    ).fetchall()


def withdraw(conn: Conn, event_ids: list[uuid.UUID]) -> int:
    """RETIRADO for PENDIENTE or FALLIDO events locked by the caller (their order was cancelled, ADR-017).

    The lease is left as it is: a worker still delivering one of them keeps it until it records (its
    outcome is then fenced out) or the lease expires, and the cancellation waits for that.
    """
    return conn.execute(
        f"UPDATE {LIVE_EVENTS} SET status = %s, withdrawn_at = now(), next_attempt_at = now()"
        " WHERE id = ANY(%s::uuid[]) AND status = ANY(%s)",
        [EventStatus.RETIRADO, list(event_ids), [EventStatus.PENDIENTE, EventStatus.FALLIDO]],
    ).rowcount


# --- The relay's SQL (guarantee 9). Each function is one statement; the relay service owns the transaction.
# Their arrays go in binary (%b): psycopg's text format quotes every element in Python, about a quarter
# of the relay workers' Python CPU in a profile (docs/performance.md); in binary the same list of 100 ids
# costs a third of that.

# A cancellation waits for its original (ADR-017): delivered, or withdrawn and no longer leased by a
# worker that may still be sending it. An event that depends on nothing is never held back.
# A webhook notice waits for the one before it the same way, and also goes on once that one has failed
# into a dead letter (ADR-022); a cancellation's original is never FALLIDO: the cancel withdrew it.
# Said the other way round, so that it reads the live partition only: no original still on its way there.
# An original filed by month (or dropped with its month) has settled by construction (history.py).
# Its states are the named parameters of ON_ITS_WAY_STATES, which every query using it passes.
ORIGINAL_SETTLED = f"""NOT EXISTS (SELECT 1 FROM {LIVE_EVENTS} o
                                 WHERE o.id = pending.depends_on
                                   AND (o.status = %(on_its_way)s
                                        OR (o.status = %(withdrawn)s AND o.locked_until >= now())))"""
ON_ITS_WAY_STATES = {"on_its_way": EventStatus.PENDIENTE, "withdrawn": EventStatus.RETIRADO}

# The claim is a template, not one text with "(%(ids)s IS NULL OR id = ANY(%(ids)s))" and a bound LIMIT:
# Postgres could not plan that once for every case, so it planned the claim again on every call (planning
# took about as long as running it). See claim_sql; measured in docs/performance.md, "The claim planned
# once" (bench/claim_plans.py).
_CLAIM_TEMPLATE = """
WITH claimed AS (
    UPDATE {LIVE_EVENTS}
       SET locked_until = now() + make_interval(secs => %(lease_s)s),
           claim_token = gen_random_uuid(),
           attempts = attempts + 1
     WHERE id IN (SELECT id FROM {LIVE_EVENTS} pending
                   WHERE status = {PENDIENTE}
                     AND next_attempt_at <= now()
                     AND (locked_until IS NULL OR locked_until < now())
                     -- a cycle that has spent its attempts is failed (fail_spent), never tried again
                     AND attempts - cycle_started_attempts < %(max_attempts)s{given_ids}
                     AND (%(destination)s::text IS NULL OR destination = %(destination)s::text)
                     AND (pending.depends_on IS NULL OR {ORIGINAL_SETTLED})
                   ORDER BY next_attempt_at
                   LIMIT {limit}
                   FOR UPDATE SKIP LOCKED)
    RETURNING id, aggregate_id, event_type, destination, payload, attempts, claim_token, request_id, depends_on,
              subscription_id, attempts - cycle_started_attempts AS cycle_attempts
), abandoned AS (
    -- An earlier attempt still open lost its lease without recording how it ended: it is over now.
    UPDATE {LIVE_ATTEMPTS} a
       SET finished_at = clock_timestamp(), outcome = %(no_outcome)s,
           error = 'el intento terminó sin que se registrara su resultado',
           duration_ms = (extract(epoch FROM clock_timestamp() - a.started_at) * 1000)::integer
      FROM claimed WHERE a.event_id = claimed.id AND a.finished_at IS NULL
), attempt AS (
    INSERT INTO {LIVE_ATTEMPTS} (event_id, attempt_no, claim_token, worker, started_at)
    SELECT id, attempts, claim_token, %(worker)s, clock_timestamp() FROM claimed
    RETURNING id AS attempt_id, event_id
)
SELECT claimed.*, attempt.attempt_id,
       -- a cancellation whose original was withdrawn may find nothing to undo there (ADR-017)
       coalesce(original.status = %(withdrawn)s, false) AS original_withdrawn,
       -- a webhook notice goes to its subscription's URL, signed with its secret (ADR-022)
       subscription.url AS webhook_url, subscription.secret AS webhook_secret
  FROM claimed JOIN attempt ON attempt.event_id = claimed.id
  -- still live: an original is not filed while an event that depends on it is live (history.py)
  LEFT JOIN {LIVE_EVENTS} original ON original.id = claimed.depends_on
  LEFT JOIN webhook_subscription subscription ON subscription.id = claimed.subscription_id
"""


_CLAIM_NAMES = {
    "PENDIENTE": PENDIENTE,
    "LIVE_EVENTS": LIVE_EVENTS,
    "LIVE_ATTEMPTS": LIVE_ATTEMPTS,
    "ORIGINAL_SETTLED": ORIGINAL_SETTLED,
}


def claim_sql(limit: int, *, given_ids: bool) -> str:
    """The claim of at most `limit` due events: every due one (a drain, the sweeper, the floor's) or given ids (a job's).

    Postgres keeps one plan for a prepared text only when that plan is no dearer than planning each call
    anew (ADR-008). A job's claim of given ids gets it with its LIMIT bound: the plan looks the ids up by
    primary key. The claim of every due event got it only with its LIMIT written in, one text per batch
    size; the same written-in LIMIT made the claim of given ids slower (1.2 → 1.4–2.0 ms for 16,
    bench/claim_plans.py), so it stays bound there.
    """
    if type(limit) is not int or limit < 1:
        raise ValueError(f"a claim takes at least one event: {limit!r}")
    if given_ids:
        return _CLAIM_GIVEN_SQL
    return _claim_every_due_sql(limit)


# Checked before the cache, not inside it: the cache takes True for 1 (they hash alike), so a check
# behind it would let True through once 1 had been asked for.
@functools.lru_cache(maxsize=64)  # a drain asks for a handful of sizes (1, 2, 4… MAX_BATCH)
def _claim_every_due_sql(limit: int) -> str:
    return _CLAIM_TEMPLATE.format(given_ids="", limit=limit, **_CLAIM_NAMES)


_CLAIM_GIVEN_SQL = _CLAIM_TEMPLATE.format(
    given_ids="\n                     AND id = ANY(%(ids)b::uuid[])", limit="%(limit)s", **_CLAIM_NAMES
)


def as_uuids(ids: Iterable[uuid.UUID | str]) -> list[uuid.UUID]:
    """Event ids as UUIDs (a job carries strings): what the claim binds in binary and the relay compares."""
    return [i if type(i) is uuid.UUID else uuid.UUID(str(i)) for i in ids]


def claim_due(
    conn: Conn,
    *,
    lease_s: float,
    worker: str,
    max_attempts: int,
    limit: int = 1,
    ids: Iterable[uuid.UUID | str] | None = None,
    destination: str | None = None,
) -> list[DictRow]:
    """Lease up to `limit` due PENDIENTE events (optionally only these ids, this destination), open their attempts.

    SKIP LOCKED lets any number of workers and sweepers claim side by side without waiting on each
    other; a fresh claim_token fences whatever a previous, expired claimant may still write. The
    attempt is counted here, before any network call, so however it ends it has been counted (guarantee 16),
    and an earlier attempt left open is closed as SIN_RESULTADO (ADR-014).
    """
    return conn.execute(
        claim_sql(limit, given_ids=ids is not None),
        {
            "lease_s": lease_s,
            "worker": worker,
            "limit": limit,  # bound in the claim of given ids only (claim_sql)
            "max_attempts": max_attempts,
            "ids": None if ids is None else as_uuids(ids),
            "destination": destination,
            "no_outcome": AttemptOutcome.SIN_RESULTADO,
            **ON_ITS_WAY_STATES,
        },
    ).fetchall()


def due_event_ids(conn: Conn, *, limit: int, max_attempts: int, grace_s: float = 0.0) -> list[DictRow]:
    """Due PENDIENTE events with attempts left and no live lease (the sweeper's look-up; it locks nothing)."""
    return conn.execute(
        f"SELECT id, request_id FROM {LIVE_EVENTS} pending"
        f" WHERE status = {PENDIENTE} AND next_attempt_at <= now() - make_interval(secs => %(grace_s)s)"
        "   AND (locked_until IS NULL OR locked_until < now())"
        "   AND attempts - cycle_started_attempts < %(max_attempts)s"
        f"   AND (pending.depends_on IS NULL OR {ORIGINAL_SETTLED})"
        " ORDER BY next_attempt_at LIMIT %(limit)s",
        {"grace_s": grace_s, "max_attempts": max_attempts, "limit": limit, **ON_ITS_WAY_STATES},
    ).fetchall()


def lock_spent(conn: Conn, *, max_attempts: int, limit: int) -> list[DictRow]:
    """Lock PENDIENTE events whose cycle used every attempt and whose last lease expired (ADR-014).

    Such an event's last attempt ended without an outcome being written: its worker or job was killed,
    or recording it failed. `last_open` says whether that last attempt row is still unfinished.
    """
    return conn.execute(
        f"""
        SELECT e.id, e.destination, e.attempts, e.attempts - e.cycle_started_attempts AS cycle_attempts,
               e.last_error,
               (SELECT a.finished_at IS NULL FROM {LIVE_ATTEMPTS} a
                 WHERE a.event_id = e.id ORDER BY a.id DESC LIMIT 1) AS last_open
          FROM {LIVE_EVENTS} e
         WHERE e.status = {PENDIENTE}
           AND e.attempts - e.cycle_started_attempts >= %s
           AND (e.locked_until IS NULL OR e.locked_until < now())
         ORDER BY e.next_attempt_at
         LIMIT %s
           FOR UPDATE OF e SKIP LOCKED
        """,
        [max_attempts, limit],
    ).fetchall()


def mark_spent(conn: Conn, event_id: uuid.UUID, *, error: str) -> DictRow | None:
    """FALLIDO for an event locked by lock_spent (the caller opens the dead letter); None if it moved on."""
    return conn.execute(
        f"UPDATE {LIVE_EVENTS} SET status = %s, locked_until = NULL, last_error = %s"
        " WHERE id = %s AND status = %s"
        " RETURNING id, aggregate_id, destination, attempts",
        [EventStatus.FALLIDO, storable_text(error), event_id, EventStatus.PENDIENTE],
    ).fetchone()


def close_open_attempts(conn: Conn, event_id: uuid.UUID, *, outcome: AttemptOutcome, error: str) -> int:
    """Close the attempt rows of an event that never recorded how they ended; return how many."""
    return conn.execute(
        f"UPDATE {LIVE_ATTEMPTS} SET finished_at = clock_timestamp(), outcome = %s, error = %s,"
        " duration_ms = (extract(epoch FROM clock_timestamp() - started_at) * 1000)::integer"
        " WHERE event_id = %s AND finished_at IS NULL",
        [outcome, storable_text(error), event_id],
    ).rowcount


# An outcome other than REINTENTO is also the event's new status (the two enums share those spellings).
RECORD_SQL = f"""
UPDATE {LIVE_EVENTS} e
   SET status = CASE o.outcome WHEN %(retry)s THEN %(pending)s ELSE o.outcome END,
       delivered_at = CASE WHEN o.outcome = %(delivered)s THEN now() ELSE e.delivered_at END,
       withdrawn_at = CASE WHEN o.outcome = %(withdrawn)s THEN now() ELSE e.withdrawn_at END,
       next_attempt_at = CASE WHEN o.outcome = %(retry)s THEN now() + make_interval(secs => o.delay_s)
                              ELSE e.next_attempt_at END,
       locked_until = NULL,
       last_error = o.error
  FROM unnest(%(ids)b::uuid[], %(tokens)b::uuid[], %(outcomes)b::text[], %(delays)b::float8[], %(errors)b::text[])
       AS o(id, claim_token, outcome, delay_s, error)
 WHERE e.id = o.id AND e.claim_token = o.claim_token AND e.status = %(pending)s
RETURNING e.id
"""


def record_outcomes(conn: Conn, outcomes: list[tuple[uuid.UUID, uuid.UUID, AttemptOutcome, float, str | None]]) -> set[uuid.UUID]:
    """Write (event id, claim token, ENTREGADO | REINTENTO | FALLIDO | RETIRADO, retry delay s, error) in one statement.

    ENTREGADO (delivered now), REINTENTO (PENDIENTE again after the delay), FALLIDO (the caller opens the
    dead letter) or RETIRADO (a cancellation with nothing to undo, ADR-017), each row fenced by its own
    claim token and only while PENDIENTE; returns the ids written (an id missing from it lost its lease
    to another claimant, or was withdrawn with its order's cancel).
    """
    if not outcomes:
        return set()
    ids, tokens, kinds, delays, errors = (list(column) for column in zip(*outcomes, strict=True))
    errors = [
        None if kind == AttemptOutcome.ENTREGADO else storable_text(error) for kind, error in zip(kinds, errors, strict=True)
    ]
    # Lock the rows in id order first: two claimants recording overlapping events (one whose lease
    # expired, one that took them over) then never wait on each other in a cycle, whatever order
    # their batches came in and whatever plan the UPDATE below gets.
    conn.execute(f"SELECT id FROM {LIVE_EVENTS} WHERE id = ANY(%b::uuid[]) ORDER BY id FOR UPDATE", [ids])
    rows = conn.execute(
        RECORD_SQL,
        {
            "ids": ids,
            "tokens": tokens,
            "outcomes": kinds,
            "delays": delays,
            "errors": errors,
            "retry": AttemptOutcome.REINTENTO,
            "pending": EventStatus.PENDIENTE,
            "delivered": AttemptOutcome.ENTREGADO,
            "withdrawn": AttemptOutcome.RETIRADO,
        },
    ).fetchall()
    return {row["id"] for row in rows}


def release_withdrawn(conn: Conn, claims: list[tuple[uuid.UUID, uuid.UUID]]) -> int:
    """End the lease of withdrawn events this claimant was still delivering, (event id, claim token) each:
    its cancellation waits for that, not for the lease to run out (ADR-017); return how many."""
    if not claims:
        return 0
    ids, tokens = (list(column) for column in zip(*claims, strict=True))
    return conn.execute(
        f"UPDATE {LIVE_EVENTS} e SET locked_until = NULL FROM unnest(%b::uuid[], %b::uuid[]) AS c(id, claim_token)"
        " WHERE e.id = c.id AND e.claim_token = c.claim_token AND e.status = %s",
        [ids, tokens, EventStatus.RETIRADO],
    ).rowcount


def close_attempts(conn: Conn, attempts: list[tuple[int, AttemptOutcome, int | None, str | None, int]]) -> None:
    """Write how several attempts ended, (attempt id, outcome, http status, error, duration ms), in one statement.

    Only rows still open: a row closed (SIN_RESULTADO by a later claim or fail_spent) is final (ADR-014). A
    claimant whose lease expired may come back after that; what it saw late is in its log line, the row
    keeps what the relay acted on.
    """
    if not attempts:
        return
    ids, outcomes, statuses, errors, durations = (list(column) for column in zip(*attempts, strict=True))
    conn.execute(
        f"UPDATE {LIVE_ATTEMPTS} a SET finished_at = clock_timestamp(), outcome = o.outcome,"
        " http_status = o.http_status, error = o.error, duration_ms = o.duration_ms"
        " FROM unnest(%b::bigint[], %b::text[], %b::integer[], %b::text[], %b::integer[])"
        "   AS o(id, outcome, http_status, error, duration_ms)"
        " WHERE a.id = o.id AND a.finished_at IS NULL",
        [ids, outcomes, statuses, [storable_text(e) for e in errors], durations],
    )


# --- What nexo/deadletters asks of the outbox (only the outbox writes outbox_event: docs/architecture.md).


def requeue_events(conn: Conn, *, event_ids: list[uuid.UUID], destination: str) -> int:
    """Put FALLIDO events of one destination back to PENDIENTE, due now, with no lease; return how many.

    `attempts` and the delivery_attempt rows are left as they are: attempts counts every try
    (CONTRACT.md) and the history of the failed cycle stays readable on the detail page. The relay's
    budget and backoff restart, though: the event gets a fresh cycle of RELAY_MAX_ATTEMPTS tries.
    """
    return conn.execute(
        f"""
        UPDATE {LIVE_EVENTS}
           SET status = %s, next_attempt_at = now(), locked_until = NULL, claim_token = NULL,
               cycle_started_attempts = attempts
         WHERE id = ANY(%s) AND destination = %s AND status = %s
        """,
        [EventStatus.PENDIENTE, list(event_ids), destination, EventStatus.FALLIDO],
    ).rowcount


def check_retention_days(days: int) -> None:
    """Refuse a retention that is not a whole number of days, at least 1, before any SQL runs.

    0 or a negative number would turn "older than N days" into "everything", whatever the settings said;
    the dead-letter purge (nexo/deadletters/repository.py) uses this same guard.
    """
    if not isinstance(days, int) or isinstance(days, bool) or days < 1:
        raise ValueError(f"retention needs a whole number of days, at least 1 (got {days!r})")


def purge_delivered_events(conn: Conn, *, destination: str, older_than_days: int, batch: int = 1000) -> list[uuid.UUID]:
    """Delete up to `batch` ENTREGADO events of one destination delivered over older_than_days ago; return their ids.

    Only those still in the live partition: the months filed by history.py go whole, dropped once past
    the retention (history.drop_expired_months). Events that still have a dead-letter row are skipped:
    deleting them would cascade to a resolved dead letter still inside its grace. They go once the
    dead-letter purge has removed those rows.
    Their delivery attempts go with them (migration 0700's trigger); the audit log keeps its rows.
    """
    check_retention_days(older_than_days)
    rows = conn.execute(
        f"""
        DELETE FROM {LIVE_EVENTS}
         WHERE id IN (SELECT e.id FROM {LIVE_EVENTS} e
                       WHERE e.destination = %(destination)s
                         AND e.status = {ENTREGADO}
                         AND e.delivered_at < now() - make_interval(days => %(days)s)
                         AND NOT EXISTS (SELECT 1 FROM dead_letter d WHERE d.event_id = e.id)
                       ORDER BY e.delivered_at
                       LIMIT %(batch)s)
        RETURNING id
        """,
        {"destination": destination, "days": older_than_days, "batch": batch},
    ).fetchall()
    return [r["id"] for r in rows]
