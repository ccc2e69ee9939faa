"""How long migration 0700 (the outbox's partitions, ADR-019) holds the outbox on a database with history.

`.venv/bin/python scripts/stack.py exec --throwaway -- .venv/bin/python -m bench.migration_0700 [EVENTS]`: makes
a database of its own on the same server, migrates it to the schema before 0700, loads EVENTS delivered events
(default 1,000,000, all of one order) with one attempt each and a dead letter for one in a hundred, then
times `db upgrade`, which copies them into the live partition under its lock: while it runs, no order can be
confirmed (ADR-019, "Upgrading"). Foreign keys are off for the load (the order's client is fake).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

from nexo import migrations

NAME = "nexo_migration_0700_bench"


def _load(url: str, events: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        # One order for them all: the migration validates the events' key to their order.
        order = conn.execute(
            "INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents, billing_status)"
            " VALUES (gen_random_uuid(), gen_random_uuid(), 'CEN', 1, 'CONFIRMADO', 0, 'FACTURADO') RETURNING id"
        ).fetchone()
        assert order is not None
        conn.execute(
            "INSERT INTO outbox_event (id, aggregate_id, event_type, destination, payload, status, attempts,"
            "                          created_at, delivered_at)"
            " SELECT gen_random_uuid(), %s, 'billing.intent_recorded', 'fiscal',"
            "        jsonb_build_object('order_id', g, 'total_cents', g), 'ENTREGADO', 1,"
            "        now() - g * interval '1 minute', now() - g * interval '1 minute'"
            "   FROM generate_series(1, %s) g",
            [order[0], events],
        )
        conn.execute(
            "INSERT INTO delivery_attempt (event_id, attempt_no, claim_token, worker, started_at, finished_at, outcome)"
            " SELECT id, 1, id, 'bench', created_at, delivered_at, 'ENTREGADO' FROM outbox_event"
        )
        conn.execute(
            "INSERT INTO dead_letter (event_id, destination, status, attempts, error_signature, first_failed_at,"
            "                         last_failed_at, resolved_at, resolved_by)"
            " SELECT id, 'fiscal', 'resolved', 1, 'fiscal:http_503', created_at, created_at, delivered_at, 'bench'"
            "   FROM outbox_event TABLESAMPLE SYSTEM (1)"
        )
        conn.execute("VACUUM ANALYZE outbox_event")
        conn.execute("VACUUM ANALYZE delivery_attempt")


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    server = os.environ["DATABASE_URL"]
    parts = urlsplit(server)
    url = urlunsplit(parts._replace(path=f"/{NAME}"))
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {NAME}")
        admin.execute(f"CREATE DATABASE {NAME}")
    try:
        with tempfile.TemporaryDirectory() as before:
            for path in sorted(migrations.MIGRATIONS_DIR.glob("*.sql")):
                if path.stem < "0700":
                    shutil.copy(path, Path(before) / path.name)
            migrations.upgrade(url, Path(before))
        began = time.perf_counter()
        _load(url, events)
        print(
            f"{events:,} events, their attempts and a dead letter for one in a hundred: loaded in"
            f" {time.perf_counter() - began:.1f} s"
        )
        began = time.perf_counter()
        applied = migrations.upgrade(url)
        took = time.perf_counter() - began
        with psycopg.connect(url) as conn:
            sizes = conn.execute(
                "SELECT (SELECT count(*) FROM outbox_event_live), (SELECT count(*) FROM delivery_attempt_live),"
                " pg_size_pretty(pg_total_relation_size('outbox_event_live') + pg_total_relation_size('delivery_attempt_live'))"
            ).fetchone()
        assert sizes is not None
        print(f"db upgrade ({', '.join(applied)}): {took:.1f} s for {sizes[0]:,} events and {sizes[1]:,} attempts ({sizes[2]})")
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {NAME}")


if __name__ == "__main__":
    main()
