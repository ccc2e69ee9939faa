"""The relay's claim with and without a history of delivered events (ADR-019, "history out of the hot path").

`.venv/bin/python scripts/stack.py exec --throwaway -- .venv/bin/python -m bench.claim_history`: loads 1,000
pending events, measures the claim index and a claim of 16 (rolled back, 20 times), then adds 1,000,000
delivered events and measures again. Foreign keys are off for the bulk load (the events' orders are fake).
"""

from __future__ import annotations

import os
import time

import psycopg

from nexo.outbox.repository import SETTLED_STATES, claim_sql
from nexo.states import AttemptOutcome

PARAMS = {
    "lease_s": 30,
    "worker": "bench",
    "max_attempts": 8,
    "destination": "fiscal",
    "no_outcome": AttemptOutcome.SIN_RESULTADO,
    **SETTLED_STATES,
}


def _add(conn: psycopg.Connection, n: int, status: str) -> None:
    conn.execute(
        "INSERT INTO outbox_event"
        " (id, aggregate_id, event_type, destination, payload, status, attempts, delivered_at, created_at)"
        " SELECT gen_random_uuid(), gen_random_uuid(), 'billing.intent_recorded', 'fiscal', '{}'::jsonb, %s, 1,"
        "        CASE WHEN %s = 'ENTREGADO' THEN now() END, now() - (g %% 1000) * interval '1 hour'"
        "   FROM generate_series(1, %s) g",
        [status, status, n],
    )


def _measure(conn: psycopg.Connection, label: str) -> None:
    conn.execute("VACUUM ANALYZE outbox_event")
    index, table, events = conn.execute(
        "SELECT pg_relation_size('outbox_pendientes_idx'), pg_relation_size('outbox_event'), (SELECT count(*) FROM outbox_event)"
    ).fetchone()  # type: ignore[misc]
    times = []
    for _ in range(20):
        with conn.transaction(force_rollback=True):
            started = time.perf_counter()
            conn.execute(claim_sql(16, given_ids=False), PARAMS).fetchall()
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    sizes = f"table {table / 1e6:.1f} MB, claim index {index / 1024:.0f} kB"
    print(f"{label}: {events:,} events, {sizes}, claim of 16 p50 {times[10]:.2f} ms")


def main() -> None:
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        _add(conn, 1000, "PENDIENTE")
        _measure(conn, "1,000 pending, no history")
        _add(conn, 1_000_000, "ENTREGADO")
        _measure(conn, "1,000 pending + 1,000,000 delivered")


if __name__ == "__main__":
    main()
