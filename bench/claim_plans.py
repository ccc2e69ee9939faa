"""How Postgres plans the relay's claim when psycopg prepares it: generic plans, custom plans, time per claim.

`.venv/bin/python scripts/stack.py exec --throwaway -- .venv/bin/python -m bench.claim_plans`: loads 8,000
orders (16,000 pending events), then claims 16 of a job's 100 ids (a new 100 each time, committed, as a
relay job does) 40 times per text, alternating the claim of given ids with the claim of every due event.
A text that Postgres plans again on every call shows only custom plans in pg_prepared_statements.
"""

from __future__ import annotations

import os
import time

import psycopg
from psycopg.rows import dict_row

from bench import data as bench_data
from nexo.db import Database
from nexo.outbox import repository as repo

CLAIMS = 40  # per round and text; the first 10 (before psycopg prepares the text) are left out of the median


def main() -> None:
    url = os.environ["DATABASE_URL"]
    db = Database(url, max_size=2, timeout_s=30, name="bench")
    data = bench_data.load(db, clients=200, skus=200, salespeople=4, password="nexo-demo")
    ids = repo.as_uuids(bench_data.insert_confirmed_orders(db, data, 8000))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE outbox_event")
    jobs = iter([ids[i : i + 100] for i in range(0, len(ids), 100)])
    for round_ in (1, 2):
        for label, given in (("given ids", True), ("every due event", False)):
            with psycopg.connect(url, row_factory=dict_row) as conn:
                times = []
                for _ in range(CLAIMS):
                    job = next(jobs)
                    started = time.perf_counter()
                    repo.claim_due(
                        conn,
                        lease_s=30,
                        worker="bench",
                        max_attempts=8,
                        limit=16,
                        ids=job if given else None,
                        destination="fiscal",
                    )
                    conn.commit()
                    times.append((time.perf_counter() - started) * 1000)
                plans = conn.execute(
                    "SELECT sum(generic_plans)::int AS generic, sum(custom_plans)::int AS custom FROM pg_prepared_statements"
                ).fetchone()
                conn.commit()
            p50 = sorted(times[10:])[(CLAIMS - 10) // 2]
            print(f"round {round_}, {label}: 16 claimed, p50 {p50:.2f} ms; plans {plans}")


if __name__ == "__main__":
    main()
