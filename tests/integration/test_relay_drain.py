"""Several workers and sweepers together (SKIP LOCKED): 2,000 events, each delivered exactly once.

`RELAY_BENCH=1 RELAY_BENCH_OUT=/tmp/bench.txt .venv/bin/python scripts/stack.py test --
tests/integration/test_relay_drain.py -q -k bench` also runs the measurement behind ADR-008 (forking vs
non-forking worker: commit → ENTREGADO latency and events/s), appending one line per class to the file.
"""

from __future__ import annotations

import os
import statistics
import time

import pytest

from nexo.outbox.wakeup import request_delivery
from tests.relay_fixtures import insert_confirmed_orders, relay_settings, wait_until

pytestmark = pytest.mark.slow


def delivered_count(db) -> int:
    with db.reading() as conn:
        return conn.execute("SELECT count(*) AS n FROM outbox_event WHERE status = 'ENTREGADO'").fetchone()["n"]


def test_workers_and_sweepers_drain_2000_events_each_delivered_exactly_once(db, fakes, relay):
    seeded = insert_confirmed_orders(db, 1000)  # no wake-ups: the sweepers must find all of them
    relay.start_workers(3)
    relay.start_sweepers(2)
    started = time.monotonic()
    wait_until(lambda: delivered_count(db) == 2000, timeout=150, interval=0.2, message="2,000 events ENTREGADO")
    print(f"\n2,000 events drained by 3 workers + 2 sweepers in {time.monotonic() - started:.1f} s")

    for dest, attr in (("fiscal", "fiscal_event_id"), ("warehouse", "warehouse_event_id")):
        effects = fakes.effects(dest)
        assert sorted(e["key"] for e in effects) == sorted(str(getattr(o, attr)) for o in seeded)
        assert {e["deliveries"] for e in effects} == {1}, "some event was POSTed twice"
    with db.reading() as conn:
        attempts = conn.execute("SELECT outcome, count(*) AS n FROM delivery_attempt GROUP BY outcome").fetchall()
        assert [(a["outcome"], a["n"]) for a in attempts] == [("ENTREGADO", 2000)]
        assert conn.execute("SELECT max(attempts) AS m FROM outbox_event").fetchone()["m"] == 1
        billed = conn.execute(
            "SELECT count(DISTINCT invoice_number) AS invoices, count(handoff_ticket) AS tickets"
            " FROM orders WHERE billing_status = 'FACTURADO'"
        ).fetchone()
        assert (billed["invoices"], billed["tickets"]) == (1000, 1000)


def _latencies(db) -> list[float]:
    with db.reading() as conn:
        rows = conn.execute(
            "SELECT extract(epoch FROM delivered_at - created_at) AS s FROM outbox_event WHERE status = 'ENTREGADO'"
        ).fetchall()
    return sorted(float(r["s"]) for r in rows)


def _measure(db, redis_client, relay, worker_class: str, workers: int) -> dict:
    procs = relay.start_workers(workers, RELAY_WORKER_CLASS=worker_class)
    settings = relay_settings()
    warm = insert_confirmed_orders(db, 5)  # let the workers connect before timing anything
    request_delivery(
        [e for o in warm for e in (o.fiscal_event_id, o.warehouse_event_id)], connection=redis_client, settings=settings
    )
    wait_until(lambda: delivered_count(db) == 10, timeout=60)
    with db.transaction() as tx:
        tx.execute("DELETE FROM delivery_attempt")
        tx.execute("UPDATE outbox_event SET created_at = delivered_at")  # keep them out of the latencies
        tx.commit()
    # Latency: one order (two events) every 50 ms, each woken right after its commit, as the web does.
    for _ in range(40):
        order = insert_confirmed_orders(db, 1)[0]
        request_delivery([order.fiscal_event_id, order.warehouse_event_id], connection=redis_client, settings=settings)
        time.sleep(0.05)
    wait_until(lambda: delivered_count(db) == 90, timeout=60)
    latencies = [s for s in _latencies(db) if s > 0][-80:]
    # Throughput: 1,000 events committed at once, all woken, drained by the workers.
    batch = insert_confirmed_orders(db, 500)
    started = time.monotonic()
    request_delivery(
        [e for o in batch for e in (o.fiscal_event_id, o.warehouse_event_id)], connection=redis_client, settings=settings
    )
    wait_until(lambda: delivered_count(db) == 1090, timeout=300, interval=0.1)
    elapsed = time.monotonic() - started
    for proc in procs:
        relay.stop(proc)
    return {
        "class": worker_class,
        "workers": workers,
        "p50_ms": 1000 * statistics.median(latencies),
        "p95_ms": 1000 * latencies[int(0.95 * (len(latencies) - 1))],
        "events_per_s": 1000 / elapsed,
    }


@pytest.mark.skipif(not os.environ.get("RELAY_BENCH"), reason="measurement, run with RELAY_BENCH=1")
@pytest.mark.parametrize("worker_class", ["simple", "fork"])
def test_bench_worker_class(db, redis_client, fakes, relay, worker_class):
    result = _measure(db, redis_client, relay, worker_class, workers=int(os.environ.get("RELAY_BENCH_WORKERS", "2")))
    line = (
        f"RELAY BENCH {result['class']} x{result['workers']}: commit→ENTREGADO p50 {result['p50_ms']:.0f} ms,"
        f" p95 {result['p95_ms']:.0f} ms; {result['events_per_s']:.0f} events/s"
    )
    print(line)
    with open(os.environ.get("RELAY_BENCH_OUT", "/dev/null"), "a") as out:
        print(line, file=out)
