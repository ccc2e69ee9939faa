"""SQL for the operations signals. Read functions take an open connection; the caller owns the transaction.

Hourly series cover the last 24 hours relative to now() (no time zone involved): index 0 is the hour
that ended 23 hours ago, index 23 the hour that is ending now.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from psycopg.rows import DictRow

from nexo.db import Conn, one_row
from nexo.outbox.partitions import LIVE_EVENTS, settled_since  # pending and failed events are in the live partition (ADR-019)
from nexo.outbox.registry import NAMES
from nexo.states import DeadLetterStatus, EventStatus, OrderStatus, ReservationKind, sql_constant

HOURS = 24
# Each signal is counted from the partial index of its state (migrations 0002, 0003, 0040, 0080): those
# predicates keep a constant, as the indexes spell it (nexo.states.sql_constant says why).
PENDIENTE = sql_constant(EventStatus.PENDIENTE)  # outbox_pendientes_idx
FALLIDO = sql_constant(EventStatus.FALLIDO)  # outbox_failed_idx
ENTREGADO = sql_constant(EventStatus.ENTREGADO)  # outbox_delivered_idx
DEAD_LETTER_PENDING = sql_constant(DeadLetterStatus.PENDING)  # dead_letter_pending_signature_idx
BLANDA = sql_constant(ReservationKind.BLANDA)  # stock_reservation_soft_idx
PENDIENTE_AUTORIZACION = sql_constant(OrderStatus.PENDIENTE_AUTORIZACION)  # orders_pending_idx
# Which hour a timestamp falls in, counted back from now(); clamped so a sample stamped a few
# milliseconds after this transaction began (another process's clock) lands in the current hour.
_BUCKET = "least({last}, {last} - floor(extract(epoch FROM now() - {col}) / 3600)::int)"


def _by_destination(rows: list[DictRow], empty: dict) -> dict[str, dict]:
    """Rows keyed by destination, with every known destination present (a zero is a value too)."""
    found = {row["destination"]: dict(row) for row in rows}
    return {d: found.get(d, {"destination": d, **empty}) for d in NAMES}


def limit_statement_time(conn: Conn, timeout: str) -> None:
    """Cap every statement of the current transaction at timeout (e.g. '5s')."""
    conn.execute("SELECT set_config('statement_timeout', %s, true)", [timeout])


def pending_events(conn: Conn) -> dict[str, dict]:
    """Signal 1 per destination: PENDIENTE count, age in seconds of the oldest, and its last error."""
    rows = conn.execute(f"""
        SELECT DISTINCT ON (destination) destination,
               count(*) OVER (PARTITION BY destination) AS pending,
               extract(epoch FROM now() - created_at)::float AS oldest_age_s,
               attempts AS oldest_attempts, last_error AS oldest_last_error
          FROM {LIVE_EVENTS}
         WHERE status = {PENDIENTE}
         ORDER BY destination, created_at, id""").fetchall()
    return _by_destination(rows, {"pending": 0, "oldest_age_s": None, "oldest_attempts": None, "oldest_last_error": None})


def failed_events(conn: Conn) -> dict[str, dict]:
    """Signal 2 per destination: FALLIDO events and dead letters still waiting for a decision."""
    rows = conn.execute(
        f"""
        SELECT d.destination,
               (SELECT count(*) FROM {LIVE_EVENTS} e
                 WHERE e.status = {FALLIDO} AND e.destination = d.destination) AS failed,
               (SELECT count(*) FROM dead_letter l
                 WHERE l.status = {DEAD_LETTER_PENDING} AND l.destination = d.destination) AS dead_letters_pending
          FROM unnest(%s::text[]) AS d(destination)""",
        [list(NAMES)],
    ).fetchall()
    return _by_destination(rows, {"failed": 0, "dead_letters_pending": 0})


def conflicts_per_hour(conn: Conn) -> list[int]:
    """Signal 3: request_id_reused conflicts in each of the last 24 hours, oldest hour first."""
    rows = conn.execute(f"""
        SELECT {_BUCKET.format(last=HOURS - 1, col="occurred_at")} AS bucket, count(*) AS n
          FROM ops_signal_event
         WHERE kind = 'request_id_reused' AND occurred_at > now() - interval '24 hours'
         GROUP BY 1""").fetchall()
    series = [0] * HOURS
    for row in rows:
        series[row["bucket"]] += row["n"]
    return series


def unresolved_credit(conn: Conn) -> dict[str, dict]:
    """Signal 4: unresolved BLANDA reservations and PENDIENTE_AUTORIZACION orders, with the oldest's age."""
    row = one_row(
        conn.execute(f"""
        SELECT (SELECT count(*) FROM stock_reservation
                 WHERE kind = {BLANDA} AND released_at IS NULL) AS soft_count,
               (SELECT extract(epoch FROM now() - min(created_at))::float FROM stock_reservation
                 WHERE kind = {BLANDA} AND released_at IS NULL) AS soft_oldest_age_s,
               (SELECT count(*) FROM orders WHERE status = {PENDIENTE_AUTORIZACION}) AS pending_count,
               (SELECT extract(epoch FROM now() - min(created_at))::float FROM orders
                 WHERE status = {PENDIENTE_AUTORIZACION}) AS pending_oldest_age_s""")
    )
    return {
        "soft_reservations": {"count": row["soft_count"], "oldest_age_s": row["soft_oldest_age_s"]},
        "pending_authorization": {"count": row["pending_count"], "oldest_age_s": row["pending_oldest_age_s"]},
    }


def order_transaction_stats(conn: Conn) -> dict[str, dict]:
    """Signal 5: p50/p95 (seconds) and count of order transactions over the last hour and 24 hours."""
    row = one_row(
        conn.execute("""
        SELECT count(*) FILTER (WHERE occurred_at > now() - interval '1 hour') AS n_1h,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds)
                   FILTER (WHERE occurred_at > now() - interval '1 hour') AS p50_1h,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY seconds)
                   FILTER (WHERE occurred_at > now() - interval '1 hour') AS p95_1h,
               count(*) AS n_24h,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) AS p50_24h,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY seconds) AS p95_24h
          FROM order_transaction_sample
         WHERE occurred_at > now() - interval '24 hours'""")
    )
    return {
        window: {"count": row[f"n_{window}"], "p50": row[f"p50_{window}"], "p95": row[f"p95_{window}"]}
        for window in ("1h", "24h")
    }


def order_transaction_outcomes(conn: Conn) -> list[DictRow]:
    """Order transactions of the last 24 hours per outcome, with their p95 (seconds)."""
    return conn.execute("""
        SELECT outcome, count(*) AS count,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY seconds) AS p95
          FROM order_transaction_sample
         WHERE occurred_at > now() - interval '24 hours'
         GROUP BY outcome ORDER BY count(*) DESC, outcome""").fetchall()


def order_transaction_p95_per_hour(conn: Conn) -> list[float | None]:
    """p95 (seconds) of the order transactions in each of the last 24 hours; None for an hour without any."""
    rows = conn.execute(f"""
        SELECT {_BUCKET.format(last=HOURS - 1, col="occurred_at")} AS bucket,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY seconds) AS p95
          FROM order_transaction_sample
         WHERE occurred_at > now() - interval '24 hours'
         GROUP BY 1""").fetchall()
    series: list[float | None] = [None] * HOURS
    for row in rows:
        series[row["bucket"]] = row["p95"]
    return series


def pending_age_history(conn: Conn) -> dict[str, list[float]]:
    """Age (seconds) of the oldest pending event per destination at each of the last 25 hour marks.

    Rebuilt from the outbox itself rather than from snapshots, so the chart needs no sampler: an event
    was pending at t if it existed, was not yet delivered, and had no open dead letter at t (a replay
    resolves the dead letter and makes the event pending again; a discard keeps it FALLIDO for good).

    Only three kinds of event can have been pending in the window, each read through an index so the
    cost follows the last day and the backlog, not the years of history (test_query_plans.py): the PENDIENTE
    ones; the delivered ones delivered inside the window; and the FALLIDO ones whose dead letter
    opened inside it. A FALLIDO event always has a dead letter opened in the same transaction
    (ADR-010), and from then on it is not pending (its latest dead letter is pending or discarded), so
    a FALLIDO event whose dead letters all opened before the window was not pending at any mark.
    A PENDIENTE event that never had a dead letter was pending at every mark since its creation, so of
    those only the oldest per destination can be the oldest at any mark: a backlog of thousands (a bad
    day, when this page is read) costs one pass over it, not one per hour mark. Of the delivered
    ones, only those pending across an hour mark are kept (most were delivered within a second).
    """
    rows = conn.execute(
        f"""
        WITH marks AS (SELECT k, now() - k * interval '1 hour' AS t FROM generate_series(0, %(hours)s) AS k),
             pending AS MATERIALIZED (
                 SELECT e.id, e.destination, e.created_at, e.delivered_at,
                        EXISTS (SELECT 1 FROM dead_letter d WHERE d.event_id = e.id) AS had_dead_letter
                   FROM {LIVE_EVENTS} e
                  WHERE e.status = {PENDIENTE}),
             candidates AS MATERIALIZED (
                 SELECT id, destination, created_at, delivered_at FROM pending WHERE had_dead_letter
                 UNION ALL
                 (SELECT DISTINCT ON (destination) id, destination, created_at, delivered_at
                    FROM pending WHERE NOT had_dead_letter
                   ORDER BY destination, created_at)
                 UNION ALL
                 SELECT id, destination, created_at, delivered_at FROM {LIVE_EVENTS}
                  WHERE status = %(failed)s
                    AND id = ANY (ARRAY(SELECT event_id FROM dead_letter
                                         WHERE created_at > now() - %(hours)s * interval '1 hour'))
                 UNION ALL
                 SELECT id, destination, created_at, delivered_at FROM outbox_event
                  WHERE status = {ENTREGADO} AND destination = ANY(%(destinations)s)
                    -- the months of the window only (ADR-019): Postgres plans those partitions alone
                    AND settled_on >= %(settled_since)s
                    AND delivered_at > now() - %(hours)s * interval '1 hour'
                    -- pending at some mark: one falls in [created_at, delivered_at)
                    AND floor(extract(epoch FROM now() - created_at) / 3600)
                        > floor(extract(epoch FROM now() - delivered_at) / 3600)),
             their_dead_letters AS MATERIALIZED (
                 SELECT event_id, created_at, status, resolved_at FROM dead_letter
                  WHERE event_id = ANY (ARRAY(SELECT id FROM candidates)))
        SELECT m.k, c.destination, extract(epoch FROM max(m.t - c.created_at))::float AS age_s
          FROM marks m
          JOIN candidates c ON c.created_at <= m.t AND (c.delivered_at IS NULL OR c.delivered_at > m.t)
         WHERE NOT EXISTS (SELECT 1 FROM their_dead_letters d
                            WHERE d.event_id = c.id AND d.created_at <= m.t
                              AND (d.status = %(discarded)s OR d.resolved_at IS NULL OR d.resolved_at > m.t))
         GROUP BY m.k, c.destination""",
        {
            "hours": HOURS,
            # a day more than the window: this process's clock and the database's may differ a little
            "settled_since": settled_since(datetime.now(UTC) - timedelta(hours=HOURS + 24)),
            "destinations": list(NAMES),
            "failed": EventStatus.FALLIDO,
            "discarded": DeadLetterStatus.DISCARDED,
        },
    ).fetchall()
    series = {d: [0.0] * (HOURS + 1) for d in NAMES}
    for row in rows:
        series[row["destination"]][HOURS - row["k"]] = row["age_s"]
    return series
