"""The relay's claim with and without a history of delivered events (ADR-019, "history out of the hot path").

`.venv/bin/python scripts/stack.py exec --throwaway -- .venv/bin/python -m bench.claim_history`: loads 1,000
pending events and measures the live partition, its claim index and a claim of 16 (rolled back, 30 times);
then adds 1,000,000 delivered events (one attempt each) still in the live partition (what a database holds
before the maintenance runner files them, and what every database held before migration 0700), files them
into 36 months by the maintenance runner's own pass (timed), and measures again. Beside the claim, a read of
one order's events that names no partition, and so plans over every month, and the same bounded by the
order's day, as the order page reads it. Foreign keys are off for the bulk load (the orders are fake).
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta

import psycopg
from psycopg.rows import dict_row

from nexo.db import Database
from nexo.outbox import history
from nexo.outbox.partitions import settled_since
from nexo.outbox.repository import ON_ITS_WAY_STATES, claim_sql
from nexo.states import AttemptOutcome

PARAMS = {
    "lease_s": 30,
    "worker": "bench",
    "max_attempts": 8,
    "destination": "fiscal",
    "no_outcome": AttemptOutcome.SIN_RESULTADO,
    **ON_ITS_WAY_STATES,
}
MONTHS = 36
HISTORY = int(os.environ.get("CLAIM_HISTORY_EVENTS", "1000000"))  # fewer for a quick look


def _add(conn: psycopg.Connection, n: int, status: str, aggregate: str = "gen_random_uuid()") -> None:
    # Delivered g hours ago, spread over MONTHS months, each with its attempt.
    conn.execute(
        "INSERT INTO outbox_event (id, aggregate_id, event_type, destination, payload, status, attempts, delivered_at,"
        "                          created_at)"
        f" SELECT gen_random_uuid(), {aggregate}, 'billing.intent_recorded', 'fiscal', '{{}}'::jsonb, %s, 1,"
        "        CASE WHEN %s = 'ENTREGADO' THEN now() - (g %% (%s * 720) + 1) * interval '1 hour' END,"
        "        now() - (g %% (%s * 720) + 1) * interval '1 hour'"
        "   FROM generate_series(1, %s) g",
        [status, status, MONTHS, MONTHS, n],
    )
    if status == "ENTREGADO":
        conn.execute(
            "INSERT INTO delivery_attempt (event_id, attempt_no, claim_token, worker, started_at, finished_at, outcome)"
            " SELECT id, 1, id, 'bench', created_at, delivered_at, status FROM outbox_event WHERE status = 'ENTREGADO'"
        )


def _p50(conn: psycopg.Connection, query: str, params: dict | list) -> tuple[float, float]:
    """Median wall time of the statement (ms, rolled back) and of its planning (ms, EXPLAIN ANALYZE), 30 runs."""
    runs, plans = [], []
    for _ in range(30):
        with conn.transaction(force_rollback=True):
            started = time.perf_counter()
            conn.execute(query, params).fetchall()
            runs.append((time.perf_counter() - started) * 1000)
        with conn.transaction(force_rollback=True):
            plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + query, params).fetchone()
            plans.append(plan["QUERY PLAN"][0]["Planning Time"])  # type: ignore[index]
    return sorted(runs)[15], sorted(plans)[15]


def _measure(conn: psycopg.Connection, label: str, order_id: object) -> None:
    # Both tables: filing leaves the moved rows dead in both live partitions until autovacuum's next pass.
    conn.execute("VACUUM ANALYZE outbox_event")
    conn.execute("VACUUM ANALYZE delivery_attempt")
    sizes = conn.execute(
        "SELECT pg_relation_size('outbox_event_live') AS live,"
        "       pg_relation_size('outbox_pendientes_idx') AS claim_index,"  # the live partition's own (migration 0700)
        "       (SELECT count(*) FROM outbox_event) AS events,"
        "       (SELECT count(*) FROM pg_inherits WHERE inhparent = 'outbox_event'::regclass) AS partitions"
    ).fetchone()
    assert sizes is not None
    claim, claim_plan = _p50(conn, claim_sql(16, given_ids=False), PARAMS)
    events_of = "SELECT id, event_type, status, delivered_at FROM outbox_event WHERE aggregate_id = %s"
    page, page_plan = _p50(conn, events_of, [order_id])
    # As the order page reads them: from the order's day on (partitions.settled_since), here an order of last week.
    since = settled_since(datetime.now(UTC) - timedelta(days=7))
    bounded, bounded_plan = _p50(conn, events_of + " AND settled_on >= %s", [order_id, since])
    print(
        f"{label}: {sizes['events']:,} events in {sizes['partitions']} partitions; live partition "
        f"{sizes['live'] / 1e6:.1f} MB, claim index {sizes['claim_index'] / 1024:.0f} kB\n"
        f"    claim of 16 p50 {claim:.2f} ms (planning {claim_plan:.2f} ms);"
        f" one order's events p50 {page:.2f} ms (planning {page_plan:.2f} ms),"
        f" from its day on {bounded:.2f} ms (planning {bounded_plan:.2f} ms)"
    )


def main() -> None:
    url = os.environ["DATABASE_URL"]
    # Loaded with the foreign keys off (its orders are fake); measured on another connection, with them on,
    # as the relay runs: the claim's attempts are checked against their events.
    load = psycopg.connect(url, autocommit=True, row_factory=dict_row)
    load.execute("SET session_replication_role = replica")
    conn = psycopg.connect(url, autocommit=True, row_factory=dict_row)
    try:
        # The history belongs to one real order: filing holds each event's order.
        _add(load, 1000, "PENDIENTE")
        order_id = load.execute("SELECT aggregate_id FROM outbox_event LIMIT 1").fetchone()["aggregate_id"]  # type: ignore[index]
        _measure(conn, "1,000 pending, no history", order_id)
        _add(load, HISTORY, "ENTREGADO", aggregate=f"'{_an_order(load)}'::uuid")
        _measure(conn, f"1,000 pending + {HISTORY:,} delivered, not yet filed", order_id)
        db = Database(url, max_size=2, name="bench")
        try:
            began = time.perf_counter()
            filed = history.file_settled_events(db)
            took = time.perf_counter() - began
        finally:
            db.close()
        batches = -(-filed.filed // history.BATCH)
        print(
            f"filed by the maintenance runner's pass: {filed.filed:,} events in {took:.1f} s"
            f" ({filed.filed / took:,.0f} events/s; {took / batches * 1000:.0f} ms a batch of {history.BATCH:,},"
            f" {len(filed.months_added)} months added)"
        )
        _measure(conn, f"1,000 pending + {HISTORY:,} delivered, filed by month", order_id)
        if os.environ.get("CLAIM_WITHOUT_KEYS"):  # a diagnostic: the same with the foreign keys' checks off
            conn.execute("SET session_replication_role = replica")
            _measure(conn, "the same, foreign keys off", order_id)
    finally:
        load.close()
        conn.close()


def _an_order(conn: psycopg.Connection) -> object:
    row = conn.execute(
        "INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents, billing_status)"
        " VALUES (gen_random_uuid(), gen_random_uuid(), 'CEN', 1, 'CONFIRMADO', 0, 'FACTURADO') RETURNING id"
    ).fetchone()
    assert row is not None
    return row["id"]


if __name__ == "__main__":
    main()
