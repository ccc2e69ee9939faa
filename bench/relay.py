"""The relay: events/s with N workers, and commit → ENTREGADO latency at a steady order rate.

Both read their times from Postgres (created_at, delivered_at, clock_timestamp()), so the bench's own
polling never adds to a figure. Every run starts from an empty outbox and an empty wake-up queue.
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import redis

from bench import data as bench_data
from bench import profile
from bench.cpu import CpuMeter
from bench.stack import ROOT, Stack
from nexo.db import Database
from nexo.orders import commands, service
from nexo.outbox import wakeup
from nexo.settings import Settings


def _unsettled(db) -> dict:
    with db.reading() as conn:
        return conn.execute(
            "SELECT count(*) FILTER (WHERE status = 'PENDIENTE') AS pending,"
            " count(*) FILTER (WHERE status = 'FALLIDO') AS failed FROM outbox_event"
            " WHERE status <> 'ENTREGADO'"
        ).fetchone()


def _wait_settled(db, timeout_s: float) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        state = _unsettled(db)
        if state["pending"] == 0 or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def throughput(
    stack: Stack,
    db,
    connection: redis.Redis,
    data: bench_data.BenchData,
    workers: int,
    events: int,
    profile_default: bool = False,
) -> dict:
    """Pre-create `events` events, start `workers` RQ workers, enqueue the wake-ups; events/s until all ENTREGADO."""
    bench_data.reset_relay(db, connection)
    ids = bench_data.insert_confirmed_orders(db, data, events // 2)
    procs = stack.start_workers(workers)  # returns once they listen: start-up is not measured
    try:
        with db.reading() as conn:
            started = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
        meter = CpuMeter(
            stack.env["DATABASE_URL"],
            stack.env["REDIS_URL"],
            {"workers": [p.pid for p in procs], "fakes": [p.pid for p in stack.fakes]},
        ).start()
        with profile.maybe(f"relay-x{workers}", [p.pid for p in procs], profile_default):
            wakeup.enqueue(connection, Settings.from_env(stack.env), [(str(e), None) for e in ids])
            state = _wait_settled(db, timeout_s=60 + events / 20)
        cpu = meter.per_op(len(ids))
        with db.reading() as conn:
            row = conn.execute(
                "SELECT count(*) AS delivered, max(delivered_at) AS last FROM outbox_event"
                " WHERE id = ANY(%s) AND status = 'ENTREGADO'",
                [ids],
            ).fetchone()
    finally:
        for proc in procs:
            stack.stop(proc)
    seconds = (row["last"] - started).total_seconds() if row["last"] else None
    return {
        "workers": workers,
        "events": len(ids),
        "delivered": row["delivered"],
        "failed": state["failed"],
        "seconds": round(seconds, 2) if seconds else None,
        "events_per_s": round(row["delivered"] / seconds, 1) if seconds else 0.0,
        "cpu_ms_per_event": cpu,
    }


def drain_throughput(stack: Stack, db, connection: redis.Redis, data: bench_data.BenchData, processes: int, events: int) -> dict:
    """Diagnostic: the same events delivered by `processes` bench.drain loops, with no RQ job per event."""
    bench_data.reset_relay(db, connection)
    ids = bench_data.insert_confirmed_orders(db, data, events // 2)
    env = {**stack.env, "PYTHONUNBUFFERED": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.drain"],
            cwd=ROOT,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(processes)
    ]
    try:
        for proc in procs:
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError("a bench.drain process did not start")
        meter = CpuMeter(stack.env["DATABASE_URL"], stack.env["REDIS_URL"], {"fakes": [p.pid for p in stack.fakes]}).start()
        with db.reading() as conn:
            started = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        drain_cpu_s = 0.0
        for proc in procs:
            proc.wait(timeout=60 + events / 20)
            drain_cpu_s += float(proc.stdout.readline().split()[1])
        cpu = {"drainers": round(drain_cpu_s * 1000 / len(ids), 2), **meter.per_op(len(ids))}
        with db.reading() as conn:
            row = conn.execute(
                "SELECT count(*) AS delivered, max(delivered_at) AS last FROM outbox_event"
                " WHERE id = ANY(%s) AND status = 'ENTREGADO'",
                [ids],
            ).fetchone()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    seconds = (row["last"] - started).total_seconds() if row["last"] else None
    return {
        "drainers": processes,
        "events": len(ids),
        "delivered": row["delivered"],
        "seconds": round(seconds, 2) if seconds else None,
        "events_per_s": round(row["delivered"] / seconds, 1) if seconds else 0.0,
        "cpu_ms_per_event": cpu,
    }


def latency(
    stack: Stack,
    db,
    connection: redis.Redis,
    data: bench_data.BenchData,
    *,
    wakeup_on: bool,
    rate: float,
    duration_s: float,
    workers: int = 1,
) -> dict:
    """Orders at `rate`/s for duration_s (direct create_order), relay as make run runs it; delivered_at − created_at."""
    bench_data.reset_relay(db, connection)
    procs = stack.start_workers(workers) + [stack.start("sweeper")]
    previous = os.environ.get("RELAY_WAKEUP")
    os.environ["RELAY_WAKEUP"] = "on" if wakeup_on else "off"  # read by _steady_orders' Settings
    try:
        order_ids, late = _steady_orders(stack.env["DATABASE_URL"], data, rate, duration_s)
        # Sweeper only: an event waits up to a sweep interval plus the wake-up grace, so allow for that.
        interval = Settings.from_env(stack.env).relay.sweep_interval_s
        state = _wait_settled(db, timeout_s=30 + 2 * interval)
        with db.reading() as conn:
            row = conn.execute(
                """
                SELECT count(*) AS delivered,
                       percentile_cont(0.5) WITHIN GROUP (ORDER BY delivered_at - created_at) AS p50,
                       percentile_cont(0.99) WITHIN GROUP (ORDER BY delivered_at - created_at) AS p99,
                       max(delivered_at - created_at) AS worst,
                       -- Where a slow tail comes from: before the claim (the order's commit, the
                       -- wake-up, the queue) or after it (the POST and the record).
                       percentile_cont(0.99) WITHIN GROUP (ORDER BY a.started_at - e.created_at) AS p99_to_claim,
                       percentile_cont(0.99) WITHIN GROUP (ORDER BY e.delivered_at - a.started_at) AS p99_claimed
                  FROM outbox_event e
                  CROSS JOIN LATERAL (SELECT started_at FROM delivery_attempt
                                       WHERE event_id = e.id ORDER BY attempt_no DESC LIMIT 1) AS a
                 WHERE e.aggregate_id = ANY(%s) AND e.status = 'ENTREGADO'
                """,
                [order_ids],
            ).fetchone()
    finally:
        if previous is None:
            os.environ.pop("RELAY_WAKEUP", None)
        else:
            os.environ["RELAY_WAKEUP"] = previous
        for proc in procs:
            stack.stop(proc)
    ms = {
        k: round(row[k].total_seconds() * 1000, 1) if row[k] is not None else None
        for k in ("p50", "p99", "worst", "p99_to_claim", "p99_claimed")
    }
    return {
        "wakeup": "on" if wakeup_on else "off (sweeper only)",
        "workers": workers,
        "sweepers": 1,
        "orders": len(order_ids),
        "rate": rate,
        "seconds": duration_s,
        "late_starts": late,
        "events": 2 * len(order_ids),
        "delivered": row["delivered"],
        "failed": state["failed"],
        "undelivered": state["pending"],
        "p50_ms": ms["p50"],
        "p99_ms": ms["p99"],
        "max_ms": ms["worst"],
        "p99_to_claim_ms": ms["p99_to_claim"],
        "p99_claimed_ms": ms["p99_claimed"],
        "sweep_interval_s": interval,
    }


def _steady_orders(database_url: str, data: bench_data.BenchData, rate: float, duration_s: float):
    """Start one create_order every 1/rate s (open loop: a slow order does not delay the next)."""
    db = Database(database_url, max_size=8, timeout_s=30, name="bench-steady")
    settings = Settings.from_env()
    ring = wakeup.Wakeup(redis.Redis.from_url(settings.redis_url), settings)  # as create_app builds it
    rng, lock = random.Random(50), threading.Lock()
    order_ids: list[uuid.UUID] = []
    late = 0

    def one(client_id, lines, salesperson_id) -> None:
        cmd = commands.CreateOrder(
            request_id=uuid.uuid4(),
            client_id=client_id,
            warehouse_id=bench_data.WAREHOUSE,
            lines=tuple(commands.OrderLineRequest(s, q) for s, q in lines),
            salesperson_id=salesperson_id,
        )
        result = service.create_order(db, cmd, ring)
        if isinstance(result, commands.Confirmed):
            with lock:
                order_ids.append(result.order_id)

    try:
        with ThreadPoolExecutor(8) as pool:
            start = time.perf_counter()
            for i in range(int(rate * duration_s)):
                delay = start + i / rate - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                elif delay < -0.05:
                    late += 1  # the generator itself fell behind (a busy machine): reported
                pool.submit(one, rng.choice(data.client_ids), data.order_lines(rng), rng.choice(data.salesperson_ids))
    finally:
        with contextlib.suppress(Exception):
            db.close()
    return order_ids, late
