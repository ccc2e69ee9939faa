"""`python -m bench` (via `make bench`): run every measurement once, print the table, write the JSON."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import redis

from bench import backup, cores, floor, growth, hot_sku, machine, mixed, order_entry, pgbench, pgbouncer, profile, relay, report
from bench import data as bench_data
from bench import scale as scales
from bench.api_client import integrations
from bench.cpu import CpuMeter
from bench.stack import ROOT, Stack
from bench.web import log_in_all
from nexo.db import Database

CONCURRENCY = (1, 8, 32)
RELAY_WORKERS = (1, 2, 4)


def say(message: str) -> None:
    print(f"[bench] {message}", flush=True)


def web_shape(env: dict) -> dict:
    """gunicorn's workers and threads as scripts/gunicorn_conf.py computes them for this environment."""
    code = "import runpy; c = runpy.run_path('scripts/gunicorn_conf.py'); print(c['workers'], c['threads'], c['worker_class'])"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    workers, threads, kind = out.stdout.split()
    return {"workers": int(workers), "threads": int(threads), "worker_class": kind}


@dataclass
class Run:
    """What every phase needs: the scale, the servers, the bench data and the processes."""

    scale: scales.Scale
    database_url: str
    redis_url: str
    db: Database
    data: bench_data.BenchData
    stack: Stack
    results: dict


def main() -> int:
    """Measure every phase asked for, print the table, write the JSON."""
    scale, phases = scales.from_env(), scales.phases()
    database_url, redis_url = os.environ.get("DATABASE_URL"), os.environ.get("REDIS_URL")
    if not database_url or not redis_url:
        sys.exit("bench: DATABASE_URL and REDIS_URL are required; run it with `make bench`")
    began = time.monotonic()
    # A queue of the bench's own: on a shared REDIS_URL, another Nexo's workers never see its wake-ups.
    os.environ.setdefault("RELAY_QUEUE", f"nexo-bench-{secrets.token_hex(3)}")
    # The API's per-key rate limit (a security setting) would otherwise be what phase (3b) measures.
    os.environ.setdefault("API_RATE_LIMIT", "1000000 per minute")
    durable = machine.make_durable(database_url)
    results: dict = {
        "started_at": datetime.now().isoformat(timespec="seconds"),
        "scale": asdict(scale),
        "machine": machine.describe(database_url, redis_url),
        "durability_restored": durable,
    }
    say(f"scale {scale.name}; phases {', '.join(sorted(phases))}; fsync {results['machine']['pg_settings']['fsync']}")
    db = Database(database_url, max_size=4, timeout_s=30, name="bench")
    data = bench_data.load(
        db,
        clients=scale.clients,
        skus=scale.skus,
        salespeople=scale.buyers,
        password=os.environ.get("NEXO_DEMO_PASSWORD", "nexo-demo"),
    )
    say(
        f"data: the Nexo morning + {scale.clients} clients with huge credit, {scale.skus} SKUs with huge stock,"
        f" {scale.buyers} salespeople"
    )
    run = Run(scale, database_url, redis_url, db, data, Stack(dict(os.environ)), results)
    with contextlib.ExitStack() as closing:
        closing.callback(db.close)
        closing.callback(run.stack.close)
        anchor = closing.enter_context(pgbench.anchor(database_url, scale.pgbench_scale)) if "pgbench" in phases else None
        if anchor is not None:
            say(f"(1) pgbench tpcb-like and simple-update, {scale.pgbench_s} s each")
            results["pgbench"] = {
                "clients": 8,
                "threads": 2,
                "scale": scale.pgbench_scale,
                "seconds": scale.pgbench_s,
                **{script: anchor.run(script, scale.pgbench_s) for script in ("tpcb-like", "simple-update")},
            }
        if "floor" in phases:
            _floor(run, delivery="relay" not in phases)  # with the relay: measured right before it
        if "direct" in phases:
            _direct(run)
        if phases & {"http", "api", "hot"}:
            _web(run, phases)
        if "relay" in phases:
            _relay(run, floor_first="floor" in phases)
        if "mixed" in phases:
            results["mixed"] = mixed.run(run)
        if "pgbouncer" in phases:
            results["pgbouncer"] = pgbouncer.run(run)
        if "growth" in phases:
            # Last: it loads a million orders into the database every other phase measured empty.
            results["growth"] = growth.run(run)
        if "backup" in phases:
            # Only when asked for (bench/scale.py ON_REQUEST): a cluster of its own, archiving, with the growth history.
            results["backup"] = backup.run(run)
        run.stack.close()
        if anchor is not None:
            # The same anchor again at the end: a large difference means the machine's load changed mid-run.
            say(f"(1) pgbench tpcb-like again, {scale.pgbench_s} s, to see whether the machine stayed as quiet")
            results["pgbench"]["tpcb-like-at-end"] = anchor.run("tpcb-like", scale.pgbench_s)
    results["machine"]["load_after"] = machine.load_average()
    results["wall_s"] = round(time.monotonic() - began, 1)
    path = _report(results)
    say(f"written {path.relative_to(ROOT)} ({results['wall_s']} s)")
    if os.environ.get("BENCH_PRINT_JSON"):
        print(json.dumps(results, indent=2, default=str))
    return 0


def _report(results: dict) -> Path:
    """Write the run, check its targets, print the table and write the run again with the verdicts."""
    report.write_json(results)  # the measurements first: a fault in the verdicts loses no run
    _verdicts(results)
    print("\n" + report.table(results) + "\n", flush=True)
    return report.write_json(results)


def _verdicts(results: dict) -> None:
    """Every round's targets, checked against this run (ADR-011)."""
    results["targets"] = report.targets(results)
    results["targets_round_2"] = report.targets_round_2(results)
    results["targets_fleet"] = report.targets_fleet(results)
    results["targets_floor"] = report.targets_floor(results)
    results["cores_allow"] = cores.bounds(results)
    results["targets_backup"] = report.targets_backup(results)


def _floor(run: Run, *, delivery: bool) -> None:
    # Before the order phases: the floor sees the same nearly empty tables direct create_order sees next.
    scale, results = run.scale, run.results
    seconds = max(1, round(scale.entry_s))  # as long as each direct measurement
    say(f"(1b) order floor: pgbench bench/order_floor.sql, {floor.ORDER_CLIENTS} clients, {seconds} s")
    # Postgres's CPU per order with no Python in between: what direct's postgres column is compared with.
    meter = CpuMeter(run.database_url, run.redis_url)
    results["order_floor"] = floor.order_floor(run.db, run.database_url, run.data, seconds, meter)
    if delivery:
        _delivery_floor(run)


def _delivery_floor(run: Run) -> None:
    # Measured right before the relay when both run: a ratio of two figures taken minutes apart on this
    # kind of machine carries the machine's drift between them (docs/performance.md, 2026-12-04).
    events = max(4000, 2 * run.scale.relay_events)  # a few seconds of delivery at least, even at smoke scale
    say(f"(1b) delivery floor: pgbench bench/delivery_floor.sql, {floor.DELIVERY_CLIENTS} lanes, {events} events")
    meter = CpuMeter(run.database_url, run.redis_url)
    run.results["delivery_floor"] = floor.delivery_floor(run.db, run.database_url, run.data, events, meter)


def _direct(run: Run) -> None:
    scale, results = run.scale, run.results
    results["direct"] = []
    for n in CONCURRENCY:
        say(f"(2) create_order direct, {n} thread(s), {scale.entry_s:g} s")
        with profile.maybe(f"direct-x{n}", [os.getpid()], n == 8):
            meter = CpuMeter(run.database_url, run.redis_url, include_self="create_order (bench process)")
            results["direct"].append(
                order_entry.direct(run.database_url, run.data, n, scale.entry_s, scale.warmup_s, meter).as_dict()
            )
    # Diagnostic: the same 8 threads with the commit-time wake-up switched off, to price the wake-up.
    say(f"(2) diagnostic: create_order direct, 8 threads, RELAY_WAKEUP=off, {scale.entry_s:g} s")
    os.environ["RELAY_WAKEUP"] = "off"
    try:
        meter = CpuMeter(run.database_url, run.redis_url, include_self="create_order (bench process)")
        results["direct_without_wakeup"] = order_entry.direct(
            run.database_url, run.data, 8, scale.entry_s, scale.warmup_s, meter
        ).as_dict()
    finally:
        os.environ.pop("RELAY_WAKEUP", None)


def _web(run: Run, phases: set[str]) -> None:
    scale, results, stack = run.scale, run.results, run.stack
    results["web"] = web_shape(stack.env)
    url = stack.start_web()
    people = log_in_all(url, run.data.usernames[: scale.buyers], run.data.password) if phases & {"http", "hot"} else []
    if "http" in phases:
        results["http"] = []
        for n in CONCURRENCY:
            say(f"(3) HTTP order form, {n} client(s), {scale.entry_s:g} s")
            with profile.maybe(f"http-x{n}", [stack.web.pid], n == 8):
                meter = CpuMeter(run.database_url, run.redis_url, {"gunicorn": [stack.web.pid]}, include_self="load generator")
                results["http"].append(order_entry.http(people, run.data, n, scale.entry_s, scale.warmup_s, meter).as_dict())
    if "api" in phases:
        results["api"] = []
        apps = integrations(run.db, url, run.data.usernames[: max(CONCURRENCY)])
        for n in CONCURRENCY:
            say(f"(3b) HTTP Orders API, {n} client(s), {scale.entry_s:g} s")
            with profile.maybe(f"api-x{n}", [stack.web.pid], n == 8):
                meter = CpuMeter(run.database_url, run.redis_url, {"gunicorn": [stack.web.pid]}, include_self="load generator")
                results["api"].append(order_entry.api(apps, run.data, n, scale.entry_s, scale.warmup_s, meter).as_dict())
    if "hot" in phases:
        say(f"(4) hot SKU: {scale.buyers} buyers of one unit")
        meter = CpuMeter(run.database_url, run.redis_url, {"gunicorn": [stack.web.pid]}, include_self="load generator")
        results["hot_sku"] = hot_sku.run(run.db, people, run.data, meter)
    stack.stop(stack.web)  # the web tier takes no part in the relay figures


def _relay(run: Run, *, floor_first: bool) -> None:
    if floor_first:
        _delivery_floor(run)
    scale, results, stack, db, data = run.scale, run.results, run.stack, run.db, run.data
    connection = redis.Redis.from_url(stack.env["REDIS_URL"])
    stack.start_fakes()
    results["relay_throughput"] = []
    for n in RELAY_WORKERS:
        say(f"(5) relay throughput, {n} worker(s), {scale.relay_events} events")
        results["relay_throughput"].append(
            relay.throughput(stack, db, connection, data, n, scale.relay_events, profile_default=n == 2)
        )
    say(f"(5) diagnostic: 2 delivery loops without RQ (sweeper.deliver_here), {scale.relay_events} events")
    results["relay_without_rq"] = relay.drain_throughput(stack, db, connection, data, 2, scale.relay_events)
    results["relay_latency"] = []
    # make run's shape (two workers, one sweeper: scripts/stack.py) with and without the wake-up; then one worker.
    for on, workers in ((True, 2), (False, 2), (True, 1)):
        say(
            f"(5) commit → ENTREGADO at {scale.latency_rate:g} orders/s for {scale.latency_s:g} s,"
            f" wake-up {'on' if on else 'off (sweeper only)'}, {workers} worker(s)"
        )
        results["relay_latency"].append(
            relay.latency(
                stack, db, connection, data, wakeup_on=on, workers=workers, rate=scale.latency_rate, duration_s=scale.latency_s
            )
        )


if __name__ == "__main__":
    sys.exit(main())
