"""Growth phase (ADR-011): the same measurements on a database with a first page of everything and after
years of history.

Order entry (create_order direct and the HTTP form) and a page load of each page people wait for
are measured at 8 clients on a database whose every list has a full first page (a small history,
generation 1 of bench/grow.py), then the years of history are loaded by set-based SQL, the planner's
statistics are refreshed (autovacuum would have, long before), and everything is measured again;
last, the clients grow to MANY_CLIENTS and the order form and its client lookup are measured a third
time. The verdict compares CPU per operation (web + Postgres), which the machine's load moves least.

The baseline is a full first page, not an empty database: an empty list renders no rows, so a
page's growth against it counted its first rows, not the years (ADR-011).
"""

from __future__ import annotations

import time
from datetime import date, timedelta

import psycopg

from bench import data as bench_data
from bench import grow, order_entry
from bench.cpu import CpuMeter
from bench.grow import Volume
from bench.load import closed_loop
from bench.web import Salesperson, log_in_all

CLIENTS = 8  # the concurrency of the other phases' reference row
LIMIT = 1.5  # the growth target: each figure within 1.5× of its value on the first page's database
# A first page of every list: 20 orders waiting for credit (the queue's whole content, before the history
# and after it: the history's load leaves none waiting), 500 dead letters (about 100 discarded: the pages
# show 50), 1,000 clients (past the select's 500: the form's lookup, as after the history), 5,000 orders
# (the bench's salespeople's own fill their lists).
FIRST_PAGE = Volume(orders=5_000, dead_letters=500, clients=1_000, skus=1_000)
MANY_CLIENTS = 100_000  # the order form stays flat up to here (ADR-011, round 3)
FORM_MAX_BYTES = 40 * 1024  # GET /orders/new at 10,000 and at MANY_CLIENTS clients (ADR-011, round 3)
CLIENT_PAGES = [  # (label, who, path): the pages measured again at MANY_CLIENTS clients
    ("GET /orders/new", "seller", "/orders/new"),
    # The lookup past 500 clients: a word a fifth of the clients have (a page of 20 at every stage), and
    # one client's name (the bench's own: the same one row at every stage; migration 0640's trigram index).
    ("GET /orders/clients?q=corralón", "seller", "/orders/clients?q=corral%C3%B3n"),
    ("GET /orders/clients?q=bench 007", "seller", "/orders/clients?q=bench+007"),
]
PAGES = [  # (label, who, path)
    *CLIENT_PAGES,
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


def _measure_pages(run, tabs: dict[str, list[Salesperson]], pages: list[tuple[str, str, str]]) -> dict:
    out = {}
    web = {"gunicorn": [run.stack.web.pid]}
    for label, who, path in pages:
        meter = CpuMeter(run.database_url, run.redis_url, web, include_self="load generator")
        out[label] = _page(tabs[who], path, run.scale.page_s, run.scale.warmup_s, meter)
    return out


def _measure(run, people: list[Salesperson], tabs: dict[str, list[Salesperson]], stage: str) -> dict:
    scale = run.scale
    print(
        f"[bench] (6) growth, {stage}: {len(PAGES)} pages, then create_order direct and the HTTP order form, {CLIENTS} clients",
        flush=True,
    )
    out = _measure_pages(run, tabs, PAGES)  # pages first: before this stage's orders add samples
    meter = CpuMeter(run.database_url, run.redis_url, include_self="create_order (bench process)")
    out["create_order direct"] = order_entry.direct(
        run.database_url, run.data, CLIENTS, scale.growth_entry_s, scale.warmup_s, meter
    ).as_dict()
    meter = CpuMeter(run.database_url, run.redis_url, {"gunicorn": [run.stack.web.pid]}, include_self="load generator")
    out["POST /orders/new"] = order_entry.http(people, run.data, CLIENTS, scale.growth_entry_s, scale.warmup_s, meter).as_dict()
    return out


def _grow(run, volume: Volume, generation: int, waiting: bool = True) -> dict:
    print(
        f"[bench] (6) growth: loading {volume.orders:,} orders, {volume.dead_letters:,} dead letters,"
        f" {volume.clients:,} clients, {volume.skus:,} SKUs by set-based SQL",
        flush=True,
    )
    forget_bench_telemetry(run.db)
    began = time.monotonic()
    rows: dict[str, int] = {}
    with run.db.transaction() as tx:
        rows = grow.load(
            tx.conn,
            volume,
            lambda table, n, s: print(f"[bench]   {table}: {n:,} rows in {s:.1f} s", flush=True),
            generation=generation,
            waiting=waiting,
        )
        tx.commit()
    loaded = time.monotonic() - began
    with psycopg.connect(run.database_url, autocommit=True) as conn:
        grow.vacuum(conn)
    vacuumed = time.monotonic() - began - loaded
    print(f"[bench]   loaded in {loaded:.1f} s, vacuumed and analysed in {vacuumed:.1f} s", flush=True)
    return {"rows": rows, "load_s": round(loaded, 1), "vacuum_analyze_s": round(vacuumed, 1)}


def run(run) -> dict:
    """Measure on a first page's worth, load the history, measure again, then the clients; the web tier runs meanwhile."""
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
    volume = run.scale.growth_volume
    try:
        first_load = _grow(run, FIRST_PAGE, generation=1)
        first_page = _measure(run, people, tabs, "a first page of everything")
        loaded = _grow(run, volume, generation=0, waiting=False)
        grown = _measure(run, people, tabs, "after the history")
        print(f"[bench] (6) growth: {MANY_CLIENTS:,} clients, then the order form and its lookup again", flush=True)
        with run.db.transaction() as tx:
            added = grow.add_clients(tx.conn, volume.clients + 1, MANY_CLIENTS)
            tx.commit()
        with psycopg.connect(run.database_url, autocommit=True) as conn:
            conn.execute("VACUUM (ANALYZE) client")
        many_clients = _measure_pages(run, tabs, CLIENT_PAGES)
    finally:
        stack.stop(stack.web)
    return {
        "clients": CLIENTS,
        "first_page_volume": FIRST_PAGE.__dict__,
        "first_page_load": first_load,
        "volume": volume.__dict__,
        "load": loaded,
        "first_page": first_page,
        "grown": grown,
        "many_clients": {"clients": _client_count(run.db), "added": added, "pages": many_clients},
    }


def _client_count(db) -> int:
    with db.reading() as conn:
        return conn.execute("SELECT count(*) AS n FROM client").fetchone()["n"]


def cpu_total(row: dict) -> float | None:
    """CPU ms per operation of the system under test (everything but the load generator)."""
    cpu = row.get("cpu_ms_per_op")
    return None if not cpu else sum(v for k, v in cpu.items() if k != "load generator")


def _verdict(what: str, before: dict, after: dict) -> dict:
    cpu_before, cpu_after = cpu_total(before), cpu_total(after)
    ratio = cpu_after / cpu_before if cpu_before and cpu_after is not None else None
    return {
        "what": what,
        "first_page_cpu_ms": cpu_before,
        "grown_cpu_ms": cpu_after,
        "ratio": ratio,
        "first_page_p50_ms": before["p50_ms"],
        "grown_p50_ms": after["p50_ms"],
        "first_page_per_s": before["per_s"],
        "grown_per_s": after["per_s"],
        "first_page_bytes": before.get("bytes"),
        "grown_bytes": after.get("bytes"),
        "errors": before["errors"] + after["errors"],
        "met": None if ratio is None else ratio <= LIMIT and after["errors"] == 0,
    }


def verdicts(growth: dict) -> list[dict]:
    """Per measurement: CPU per operation on the first page's database and grown, their ratio, and whether
    it is within LIMIT; then the client pages at MANY_CLIENTS clients against the same first page."""
    out = [_verdict(label, first, growth["grown"][label]) for label, first in growth["first_page"].items()]
    many = growth.get("many_clients")
    if many:
        out += [
            _verdict(f"{label}, {many['clients']:,} clients", growth["first_page"][label], after)
            for label, after in many["pages"].items()
        ]
    return out


def order_form_bytes(growth: dict) -> tuple[int | None, int | None]:
    """The order form's size after the history (10,000 clients) and at MANY_CLIENTS (None: not measured)."""
    many = (growth.get("many_clients") or {}).get("pages", {})
    grown = growth.get("grown", {}).get("GET /orders/new", {})
    return grown.get("bytes"), many.get("GET /orders/new", {}).get("bytes")


def table(growth: dict) -> list[str]:
    """The growth phase's lines of the printed table."""
    v, load, first = growth["volume"], growth["load"], growth["first_page_volume"]
    lines = [
        f"(6) growth: a first page of everything ({first['orders']:,} orders, {first['dead_letters']:,} dead letters,"
        f" {first['clients']:,} clients, {first['skus']:,} SKUs), then {v['orders']:,} orders, {v['dead_letters']:,}"
        f" dead letters, {v['clients']:,} clients, {v['skus']:,} SKUs loaded in {load['load_s']} s"
        f" (+ {load['vacuum_analyze_s']} s VACUUM ANALYZE); {growth['clients']} clients",
        "    " + ", ".join(f"{t} {n:,}" for t, n in load["rows"].items()),
        f"    {'what':<58} {'CPU ms/op first → grown':>24} {'ratio':>6} {'p50 ms first → grown':>21}"
        f" {'KB':>12}  verdict (≤ {LIMIT}×)",
    ]
    for r in verdicts(growth):
        cpu = "—" if r["ratio"] is None else f"{r['first_page_cpu_ms']:.1f} → {r['grown_cpu_ms']:.1f}"
        p50 = f"{r['first_page_p50_ms']} → {r['grown_p50_ms']}"
        size = "" if r["first_page_bytes"] is None else f"{r['first_page_bytes'] / 1024:.0f} → {r['grown_bytes'] / 1024:.0f}"
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.2f}"
        verdict = "not measured" if r["met"] is None else ("met" if r["met"] else "NOT met")
        errors = f" ({r['errors']} errors)" if r["errors"] else ""
        lines.append(f"    {r['what']:<58} {cpu:>24} {ratio:>6} {p50:>21} {size:>12}  {verdict}{errors}")
    return lines + [""]
