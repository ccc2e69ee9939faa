"""Growth phase (ADR-011): the same measurements on an empty database and after years of history.

Order entry (create_order direct and the HTTP form) and a page load of each page people wait for
are measured at 8 clients, then bench/grow.py loads the history by set-based SQL, the planner's
statistics are refreshed (autovacuum would have, long before), and everything is measured again. The
verdict compares CPU per operation (web + Postgres), which the machine's load moves least.
"""

from __future__ import annotations

import time
from datetime import date, timedelta

import psycopg

from bench import data as bench_data
from bench import grow, order_entry
from bench.cpu import CpuMeter
from bench.load import closed_loop
from bench.web import Salesperson, log_in_all

CLIENTS = 8  # the concurrency of the other phases' reference row
LIMIT = 1.5  # the growth target: each figure within 1.5× of its empty-database value
PAGES = [  # (label, who, path)
    ("GET /orders/new", "seller", "/orders/new"),
    ("GET /orders/skus?q=ben-01", "seller", "/orders/skus?q=ben-01"),
    # By two words, one of the name without its accent ("Artículo de banco BEN-0100"): the trigram index.
    ("GET /orders/skus?q=articulo ben-01", "seller", "/orders/skus?q=articulo+ben-01"),
    ("GET /orders", "seller", "/orders"),
    # The back office's filters (ADR-020), each served by an index on the grown database: one client by
    # name (the bench's own client, the same rows before and after the history), a status, the last week.
    ("GET /orders/all?cliente=bench 007", "marta", "/orders/all?cliente=bench+007"),
    ("GET /orders/all?estado=CONFIRMADO", "marta", "/orders/all?estado=CONFIRMADO"),
    ("GET /orders/all?desde=(a week ago)", "marta", f"/orders/all?desde={(date.today() - timedelta(days=7)).isoformat()}"),
    ("GET /credit/queue", "laura", "/credit/queue"),
    ("GET /admin/dead-letters", "marta", "/admin/dead-letters"),
    (
        "GET /admin/dead-letters?destination=fiscal&status=discarded",
        "marta",
        "/admin/dead-letters?destination=fiscal&status=discarded",
    ),
    ("GET /ops", "marta", "/ops"),
    ("GET /metrics", "anonymous", "/metrics"),
]


def _page(sessions: list[Salesperson], path: str, duration_s: float, warmup_s: float, meter):
    sizes: list[int] = []

    def load(person: Salesperson, _rng):
        status, body = person.request("GET", path, keep_cookie=False)
        sizes.append(len(body.encode()))
        return status == 200, f"HTTP {status}"

    m = closed_loop(path, CLIENTS, lambda i: sessions[i], load, duration_s, warmup_s, meter).as_dict()
    return {**m, "bytes": max(sizes) if sizes else None}


def forget_bench_telemetry(db) -> None:
    """Delete what the bench's own orders left: samples, signal events and undelivered events (bench-only).

    /ops and /metrics read the last day's samples and the current backlog: thousands of bench orders
    a minute earlier (their events undelivered, no relay runs in these phases) would make them slower
    in whichever stage came second, and that cost follows the orders of a day and the backlog, not
    the years of history this phase is about. The history brings its own last day of samples.
    """
    bench_data.retire_pending_events(db)
    with db.transaction() as tx:
        tx.execute("DELETE FROM order_transaction_sample")
        tx.execute("DELETE FROM ops_signal_event")
        tx.commit()


def _measure(run, url: str, people: list[Salesperson], tabs: dict[str, list[Salesperson]], stage: str) -> dict:
    scale, out = run.scale, {}
    print(
        f"[bench] (6) growth, {stage}: {len(PAGES)} pages, then create_order direct and the HTTP order form, {CLIENTS} clients",
        flush=True,
    )
    web = {"gunicorn": [run.stack.web.pid]}
    for label, who, path in PAGES:  # pages first: before this stage's orders add samples
        meter = CpuMeter(run.database_url, run.redis_url, web, include_self="load generator")
        out[label] = _page(tabs[who], path, scale.page_s, scale.warmup_s, meter)
    meter = CpuMeter(run.database_url, run.redis_url, include_self="create_order (bench process)")
    out["create_order direct"] = order_entry.direct(
        run.database_url, run.data, CLIENTS, scale.growth_entry_s, scale.warmup_s, meter
    ).as_dict()
    meter = CpuMeter(run.database_url, run.redis_url, web, include_self="load generator")
    out["POST /orders/new"] = order_entry.http(people, run.data, CLIENTS, scale.growth_entry_s, scale.warmup_s, meter).as_dict()
    return out


def _grow(run) -> dict:
    volume = run.scale.growth_volume
    print(
        f"[bench] (6) growth: loading {volume.orders:,} orders, {volume.dead_letters:,} dead letters,"
        f" {volume.clients:,} clients, {volume.skus:,} SKUs by set-based SQL",
        flush=True,
    )
    forget_bench_telemetry(run.db)
    began = time.monotonic()
    rows: dict[str, int] = {}
    with run.db.transaction() as tx:
        rows = grow.load(tx.conn, volume, lambda table, n, s: print(f"[bench]   {table}: {n:,} rows in {s:.1f} s", flush=True))
        tx.commit()
    loaded = time.monotonic() - began
    with psycopg.connect(run.database_url, autocommit=True) as conn:
        grow.vacuum(conn)
    vacuumed = time.monotonic() - began - loaded
    print(f"[bench]   loaded in {loaded:.1f} s, vacuumed and analysed in {vacuumed:.1f} s", flush=True)
    return {"rows": rows, "load_s": round(loaded, 1), "vacuum_analyze_s": round(vacuumed, 1)}


def run(run) -> dict:
    """Measure on the bench data, load the history, measure again; the web tier runs meanwhile."""
    stack = run.stack
    url = stack.start_web()
    people = log_in_all(url, run.data.usernames[:CLIENTS], run.data.password)
    staff = {who: Salesperson(url, who, run.data.password, order_form=False) for who in ("laura", "marta")}
    tabs = {
        "seller": [p.another_tab() for p in people],
        **{who: [s.another_tab() for _ in range(CLIENTS)] for who, s in staff.items()},
        "anonymous": [people[0].another_tab() for _ in range(CLIENTS)],
    }
    for anonymous in tabs["anonymous"]:
        anonymous.cookie = ""  # /metrics is read by a scraper, without a session
    try:
        forget_bench_telemetry(run.db)
        empty = _measure(run, url, people, tabs, "empty database")
        loaded = _grow(run)
        grown = _measure(run, url, people, tabs, "after the history")
    finally:
        stack.stop(stack.web)
    return {"clients": CLIENTS, "volume": run.scale.growth_volume.__dict__, "load": loaded, "empty": empty, "grown": grown}


def cpu_total(row: dict) -> float | None:
    """CPU ms per operation of the system under test (everything but the load generator)."""
    cpu = row.get("cpu_ms_per_op")
    return None if not cpu else sum(v for k, v in cpu.items() if k != "load generator")


def verdicts(growth: dict) -> list[dict]:
    """Per measurement: empty and grown CPU per operation, their ratio, and whether it is within LIMIT."""
    out = []
    for label, empty in growth["empty"].items():
        grown = growth["grown"][label]
        before, after = cpu_total(empty), cpu_total(grown)
        ratio = after / before if before and after is not None else None
        out.append(
            {
                "what": label,
                "empty_cpu_ms": before,
                "grown_cpu_ms": after,
                "ratio": ratio,
                "empty_p50_ms": empty["p50_ms"],
                "grown_p50_ms": grown["p50_ms"],
                "empty_per_s": empty["per_s"],
                "grown_per_s": grown["per_s"],
                "empty_bytes": empty.get("bytes"),
                "grown_bytes": grown.get("bytes"),
                "errors": empty["errors"] + grown["errors"],
                "met": None if ratio is None else ratio <= LIMIT and grown["errors"] == 0,
            }
        )
    return out


def table(growth: dict) -> list[str]:
    """The growth phase's lines of the printed table."""
    v, load = growth["volume"], growth["load"]
    lines = [
        f"(6) growth: {v['orders']:,} orders, {v['dead_letters']:,} dead letters, {v['clients']:,} clients,"
        f" {v['skus']:,} SKUs loaded in {load['load_s']} s (+ {load['vacuum_analyze_s']} s VACUUM ANALYZE);"
        f" {growth['clients']} clients",
        "    " + ", ".join(f"{t} {n:,}" for t, n in load["rows"].items()),
        f"    {'what':<58} {'CPU ms/op empty → grown':>24} {'ratio':>6} {'p50 ms empty → grown':>21}"
        f" {'KB':>12}  verdict (≤ {LIMIT}×)",
    ]
    for r in verdicts(growth):
        cpu = "—" if r["ratio"] is None else f"{r['empty_cpu_ms']:.1f} → {r['grown_cpu_ms']:.1f}"
        p50 = f"{r['empty_p50_ms']} → {r['grown_p50_ms']}"
        size = "" if r["empty_bytes"] is None else f"{r['empty_bytes'] / 1024:.0f} → {r['grown_bytes'] / 1024:.0f}"
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.2f}"
        verdict = "not measured" if r["met"] is None else ("met" if r["met"] else "NOT met")
        errors = f" ({r['errors']} errors)" if r["errors"] else ""
        lines.append(f"    {r['what']:<58} {cpu:>24} {ratio:>6} {p50:>21} {size:>12}  {verdict}{errors}")
    return lines + [""]
