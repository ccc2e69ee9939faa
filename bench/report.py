"""The bench's answer: its two rounds of targets (ADR-011) checked against one run, a plain-text table and a JSON file."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from bench import backup, cores, growth, mixed, pgbouncer

RESULTS = Path(__file__).resolve().parent / "results"


def _find(rows: list[dict], concurrency: int) -> dict | None:
    return next((r for r in rows if r["concurrency"] == concurrency), None)


def _compared(results: dict) -> tuple:
    """The rows both target tables read: pgbench's tpcb-like tps, HTTP and direct at 8, the hot SKU,
    the relay with 2 workers, and commit → ENTREGADO with the wake-up on and 2 workers (None: not run)."""
    return (
        (results.get("pgbench") or {}).get("tpcb-like", {}).get("tps"),
        _find(results.get("http", []), 8),
        _find(results.get("direct", []), 8),
        results.get("hot_sku"),
        next((r for r in results.get("relay_throughput", []) if r["workers"] == 2), None),
        next((r for r in results.get("relay_latency", []) if r["wakeup"] == "on" and r["workers"] == 2), None),
    )


def targets(results: dict) -> list[dict]:
    """The first round's targets (order entry and delivery), each with its measured value and whether it is met.

    A value of None: not measured.
    """
    tpcb, http8, direct8, hot, relay2, woken = _compared(results)

    def ratio(row):
        return row["per_s"] / tpcb if row and tpcb else None

    checks = [
        ("HTTP order entry, 8 clients ÷ pgbench tpcb-like", ratio(http8), "≥ 10 %", lambda v: v >= 0.10, "pct"),
        ("HTTP order entry, 8 clients: p99", http8 and http8["p99_ms"], "≤ 50 ms", lambda v: v <= 50, "ms"),
        ("HTTP order entry, 8 clients: errors", http8 and http8["errors"], "0", lambda v: v == 0, "n"),
        ("create_order direct, 8 threads ÷ pgbench tpcb-like", ratio(direct8), "≥ 30 %", lambda v: v >= 0.30, "pct"),
        ("hot SKU: all 64 answered within", hot and hot["settled_s"], "< 1 s", lambda v: v < 1.0, "s"),
        ("hot SKU: successes", hot and hot["successes"], "1", lambda v: v == 1, "n"),
        ("hot SKU: errors", hot and hot["errors"], "0", lambda v: v == 0, "n"),
        ("commit → ENTREGADO p50, 50 orders/s, as make run", woken and woken["p50_ms"], "≤ 50 ms", lambda v: v <= 50, "ms"),
        ("commit → ENTREGADO p99, 50 orders/s, as make run", woken and woken["p99_ms"], "≤ 250 ms", lambda v: v <= 250, "ms"),
        ("relay, 2 workers", relay2 and relay2["events_per_s"], "≥ 500 events/s", lambda v: v >= 500, "ev/s"),
    ]
    return _verdicts(checks)


def targets_round_2(results: dict) -> list[dict]:
    """The second round's targets (CPU per unit of work first: rates move with the machine's load, CPU much less)."""
    tpcb, http8, direct8, hot, relay2, woken = _compared(results)
    mixed = results.get("mixed") or None

    # CPU ms per unit of work, by part; {} when the phase did not run (BENCH_ONLY).
    http_cpu = http8["cpu_ms_per_op"] if http8 else {}
    direct_cpu = direct8["cpu_ms_per_op"] if direct8 else {}
    relay_cpu = relay2["cpu_ms_per_event"] if relay2 else {}

    def ratio(row):
        return row["per_s"] / tpcb if row and tpcb else None

    checks = [
        ("HTTP, 8 clients: web CPU per order", http_cpu.get("gunicorn"), "≤ 2.5 ms", lambda v: v <= 2.5, "ms"),
        ("HTTP, 8 clients: Postgres CPU per order", http_cpu.get("postgres"), "≤ 1.5 ms", lambda v: v <= 1.5, "ms"),
        ("HTTP, 8 clients ÷ pgbench tpcb-like", ratio(http8), "≥ 10 %", lambda v: v >= 0.10, "pct"),
        ("HTTP, 8 clients: p99", http8 and http8["p99_ms"], "≤ 50 ms", lambda v: v <= 50, "ms"),
        (
            "direct, 8 threads: Python CPU per order",
            direct_cpu.get("create_order (bench process)"),
            "≤ 0.8 ms",
            lambda v: v <= 0.8,
            "ms",
        ),
        ("direct, 8 threads: Postgres CPU per order", direct_cpu.get("postgres"), "≤ 1.0 ms", lambda v: v <= 1.0, "ms"),
        ("direct, 8 threads ÷ pgbench tpcb-like", ratio(direct8), "≥ 30 %", lambda v: v >= 0.30, "pct"),
        ("relay, 2 workers: worker CPU per event", relay_cpu.get("workers"), "≤ 0.8 ms", lambda v: v <= 0.8, "ms"),
        ("relay, 2 workers: Postgres CPU per event", relay_cpu.get("postgres"), "≤ 0.7 ms", lambda v: v <= 0.7, "ms"),
        ("relay, 2 workers", relay2 and relay2["events_per_s"], "≥ 500 events/s", lambda v: v >= 500, "ev/s"),
        ("hot SKU: all 64 answered within", hot and hot["settled_s"], "< 0.5 s", lambda v: v < 0.5, "s"),
        ("commit → ENTREGADO p50, 50 orders/s, 2 workers", woken and woken["p50_ms"], "≤ 20 ms", lambda v: v <= 20, "ms"),
        ("commit → ENTREGADO p99, 50 orders/s, 2 workers", woken and woken["p99_ms"], "≤ 100 ms", lambda v: v <= 100, "ms"),
        # A mixed phase that sustained no rate at all measured 0, not nothing.
        (
            "mixed: highest sustained rate",
            mixed and (mixed.get("highest_sustained_rate") or 0),
            "≥ 250 orders/s",
            lambda v: v >= 250,
            "orders/s",
        ),
    ]
    return _verdicts(checks)


def targets_floor(results: dict) -> list[dict]:
    """The third round's targets: each path as a share of its own floor (bench/floor.py), the tail under the
    mixed load, the web CPU of an order, and the pages as the data grows, in one run (ADR-011)."""
    _, http8, direct8, _, relay2, _ = _compared(results)
    mixed_run = results.get("mixed") or None
    at_250 = next((s for s in (mixed_run or {}).get("steps", []) if s["rate"] == 250), None)
    grown = results.get("growth") or None
    over = sum(1 for r in growth.verdicts(grown) if r["met"] is False) if grown else None
    form_10k, form_many = growth.order_form_bytes(grown) if grown else (None, None)
    order_floor = (results.get("order_floor") or {}).get("orders_per_s")
    delivery_floor = (results.get("delivery_floor") or {}).get("events_per_s")

    def share(value, floor):
        return value / floor if value is not None and floor else None

    checks = [
        (
            "direct create_order @8 ÷ order floor @8",
            share(direct8 and direct8["per_s"], order_floor),
            "≥ 70 %",
            lambda v: v >= 0.70,
            "pct",
        ),
        ("HTTP form @8 ÷ order floor @8", share(http8 and http8["per_s"], order_floor), "≥ 35 %", lambda v: v >= 0.35, "pct"),
        (
            "relay, 2 workers ÷ delivery floor",
            share(relay2 and relay2["events_per_s"], delivery_floor),
            "≥ 50 %",
            lambda v: v >= 0.50,
            "pct",
        ),
        (
            "mixed: highest sustained rate",
            mixed_run and (mixed_run.get("highest_sustained_rate") or 0),
            "≥ 350 orders/s",
            lambda v: v >= 350,
            "orders/s",
        ),
        # Not reached: a phase that stopped below 250 orders/s measured no p99 there (—, not measured).
        ("mixed: POST p99 at 250 orders/s", at_250 and at_250["p99_ms"], "≤ 100 ms", lambda v: v <= 100, "ms"),
        (
            "HTTP @8: web CPU per order",
            (http8 or {}).get("cpu_ms_per_op", {}).get("gunicorn"),
            "≤ 1.5 ms",
            lambda v: v <= 1.5,
            "ms",
        ),
        ("growth rows over 1.5×, first page → grown", over, "0", lambda v: v == 0, "n"),
        ("GET /orders/new, 10,000 clients", form_10k, "≤ 40 KB", lambda v: v <= growth.FORM_MAX_BYTES, "KB"),
        (
            f"GET /orders/new, {growth.MANY_CLIENTS:,} clients",
            form_many,
            "≤ 40 KB",
            lambda v: v <= growth.FORM_MAX_BYTES,
            "KB",
        ),
    ]
    return _verdicts(checks)


def _floor_lines(results: dict, tpcb: float | None) -> list[str]:
    """The floor's own figures (bench/floor.py): orders/s and events/s of the SQL alone."""
    order, delivery = results.get("order_floor"), results.get("delivery_floor")
    lines = []
    if order:
        share = f" ({order['orders_per_s'] / tpcb * 100:.1f} % of tpcb-like)" if tpcb else ""
        lines += [
            "(1b) the floor: create_order's SQL and a relay batch's SQL alone, pgbench -M prepared on the bench's data",
            f"    order floor, bench/order_floor.sql, {order['clients']} clients, {order['seconds']} s:"
            f" {_num(order['orders_per_s'])} orders/s{share}, avg latency {order['latency_ms']} ms,"
            f" {order['confirmed']} orders CONFIRMADO of {order['transactions']} transactions"
            + _postgres_cpu(order.get("cpu_ms_per_order"), "order"),
        ]
    if delivery:
        if not order:
            lines.append("(1b) the floor: a relay batch's SQL alone, pgbench -M prepared on the bench's data")
        lines.append(
            f"    delivery floor, bench/delivery_floor.sql, {delivery['clients']} lanes, batches of {delivery['batch']}:"
            f" {_num(delivery['events_per_s'])} events/s ({delivery['delivered']} of {delivery['events']} ENTREGADO"
            f" in {delivery['seconds']} s)" + _postgres_cpu(delivery.get("cpu_ms_per_event"), "event")
        )
    return lines + [""] if lines else []


def _postgres_cpu(cpu: dict | None, unit: str) -> str:
    return f", Postgres CPU {cpu['postgres']:.2f} ms/{unit}" if cpu and cpu.get("postgres") is not None else ""


def targets_fleet(results: dict) -> list[dict]:
    """The PgBouncer phase's targets (bench/pgbouncer.py)."""
    return _verdicts(pgbouncer.targets(results))


def targets_backup(results: dict) -> list[dict]:
    """The backup phase's targets (bench/backup.py, ADR-016)."""
    return _verdicts(backup.targets(results))


def _verdicts(checks) -> list[dict]:
    out = []
    for name, value, goal, test, unit in checks:
        met = None if value is None else bool(test(value))
        out.append({"target": name, "goal": goal, "measured": value, "unit": unit, "met": met})
    return out


def _fmt(value, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "verdict":
        return "holds" if value else "FAILED"
    return {
        "pct": f"{value * 100:.1f} %",
        "ms": f"{value:.2f} ms" if value < 10 else f"{value:.1f} ms",
        "s": f"{value:.3f} s",
        "seconds": f"{value:.1f} s",
        "ev/s": f"{value:.0f} events/s",
        "orders/s": f"{value:.0f} orders/s",
        "connections": f"{value} connections",
        "KB": f"{value / 1024:.1f} KB",
    }.get(unit, str(value))


def _num(value, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _cpu(values: dict | None) -> str:
    # Parts in the order the column header names them: the Python tier first, then the servers.
    if not values:
        return "—"
    first = sorted((k for k in values if k not in ("postgres", "redis", "load generator")), key=lambda k: k == "fakes")
    order = first + [k for k in ("postgres", "redis", "load generator") if k in values]
    return " · ".join(f"{values[k]:.1f}" for k in order)


def _shares(per_s: float, tpcb: float | None, floor: float | None) -> tuple[str, str]:
    """A row's rate as a share of pgbench tpcb-like and of the order floor ("—": not measured)."""

    def share(anchor: float | None) -> str:
        return f"{per_s / anchor * 100:.1f} %" if anchor else "—"

    return share(tpcb), share(floor)


def table(results: dict) -> str:
    """The run as a plain-text table (what `make bench` prints and the README pastes)."""
    m = results["machine"]
    lines = [
        f"Nexo bench {results['started_at']} · scale {results['scale']['name']} · {m['cpu']} × {m['cores']} cores,"
        f" {m['memory_gb']} GB · {m['postgres']} (fsync {m['pg_settings'].get('fsync')},"
        f" synchronous_commit {m['pg_settings'].get('synchronous_commit')}) · Redis {m['redis']}",
        f"load average before {m['load_before']} · after {m['load_after']} · the load generator runs on the same cores",
        "",
    ]
    pg = results.get("pgbench")
    if pg:
        lines.append(f"(1) pgbench, {pg['clients']} clients, -j {pg['threads']}, scale {pg['scale']}, {pg['seconds']} s each")
        for script in ("tpcb-like", "simple-update"):
            lines.append(f"    {script:<16} {_num(pg[script]['tps']):>10} tps   avg latency {pg[script]['latency_ms']} ms")
        end = pg.get("tpcb-like-at-end")
        if end:
            drift = (end["tps"] / pg["tpcb-like"]["tps"] - 1) * 100
            lines.append(
                f"    tpcb-like again at the end: {_num(end['tps'])} tps ({drift:+.0f} %)"
                + ("  ← the machine's load changed during the run: compare with care" if abs(drift) > 15 else "")
            )
        lines.append("")
    tpcb = pg["tpcb-like"]["tps"] if pg else None
    lines += _floor_lines(results, tpcb)
    for key, title in (
        ("direct", "(2) create_order direct (no HTTP), 2-line orders"),
        (
            "http",
            "(3) HTTP POST /orders/new (gunicorn as make run: "
            f"{results.get('web', {}).get('workers')} gthread workers × "
            f"{results.get('web', {}).get('threads')} threads), CSRF, 303 = success",
        ),
        ("api", "(3b) HTTP POST /api/v1/orders (the same gunicorn), bearer key, fresh Idempotency-Key, 201 = success"),
    ):
        rows = results.get(key)
        if not rows:
            continue
        lines += [
            title,
            "    conc   orders/s    p50 ms    p99 ms   errors   ÷ tpcb-like    ÷ floor   CPU ms/order: "
            + ("python · postgres · redis" if key == "direct" else "gunicorn · postgres · redis · load generator"),
        ]
        for r in rows:
            share, of_floor = _shares(r["per_s"], tpcb, (results.get("order_floor") or {}).get("orders_per_s"))
            lines.append(
                f"    {r['concurrency']:>4} {_num(r['per_s']):>10} {_num(r['p50_ms']):>9} {_num(r['p99_ms']):>9}"
                f" {r['errors']:>8} {share:>12} {of_floor:>10}   {_cpu(r.get('cpu_ms_per_op'))}"
            )
        bare = results.get("direct_without_wakeup") if key == "direct" else None
        if bare:
            lines.append(
                f"    diagnostic, 8 threads without the commit-time wake-up (RELAY_WAKEUP=off): {_num(bare['per_s'])}"
                f" orders/s, p99 {_num(bare['p99_ms'])} ms, CPU ms/order {_cpu(bare.get('cpu_ms_per_op'))}"
            )
        lines.append("")
    hot = results.get("hot_sku")
    if hot:
        lines += [
            f"(4) hot SKU: {hot['buyers']} buyers of 1 unit over HTTP, released by one barrier",
            f"    all answered in {hot['settled_s']} s · successes {hot['successes']} · insufficient_stock"
            f" {hot['insufficient_stock']} · errors {hot['errors']} · stock after: reserved"
            f" {hot['stock_after']['reserved']} of {hot['stock_after']['on_hand']}",
            f"    CPU ms/answer: gunicorn · postgres · redis · load generator {_cpu(hot.get('cpu_ms_per_answer'))}",
            "",
        ]
    if results.get("relay_throughput"):
        lines += [
            "(5) relay throughput (events pre-created, wake-ups enqueued, until all ENTREGADO)",
            "    workers   events   seconds   events/s   failed   CPU ms/event: workers · fakes · postgres · redis",
        ]
        for r in results["relay_throughput"]:
            lines.append(
                f"    {r['workers']:>7} {r['events']:>8} {_num(r['seconds'], 2):>9} {_num(r['events_per_s']):>10}"
                f" {r['failed']:>8}   {_cpu(r.get('cpu_ms_per_event'))}"
            )
        bare = results.get("relay_without_rq")
        if bare:
            lines.append(
                f"    diagnostic, no RQ job per event ({bare['drainers']} sweeper.deliver_here loops):"
                f" {_num(bare['events_per_s'])} events/s, CPU ms/event {_cpu(bare.get('cpu_ms_per_event'))}"
            )
        lines.append("")
    if results.get("relay_latency"):
        lines += [
            "    commit → ENTREGADO (delivered_at − created_at), create_order at a steady rate, 1 sweeper",
            "    (p99 split: created → claimed is the commit, the wake-up and the queue; claimed → delivered the",
            "    POST and the record)",
            "    wake-up             workers  orders/s  events    p50 ms     p99 ms     max ms  undelivered"
            "  p99 → claimed  p99 claimed →",
        ]
        for r in results["relay_latency"]:
            lines.append(
                f"    {r['wakeup']:<19} {r['workers']:>7} {r['rate']:>9.0f} {r['events']:>7} {_num(r['p50_ms']):>9}"
                f" {_num(r['p99_ms']):>10} {_num(r['max_ms']):>10} {r['undelivered']:>12}"
                f" {_num(r.get('p99_to_claim_ms')):>14} {_num(r.get('p99_claimed_ms')):>14}"
            )
        lines.append("")
    for key, phase_table in (
        ("mixed", mixed.table),
        ("pgbouncer", pgbouncer.table),
        ("growth", growth.table),
        ("backup", backup.table),
    ):
        if results.get(key):
            lines += phase_table(results[key])
    lines += cores.table(results)
    for title, checked in (
        ("Targets (round 1: rates and latency, ADR-011)", results["targets"]),
        ("Targets (round 2: CPU per unit of work first, ADR-011)", results.get("targets_round_2") or []),
        ("Targets (several hosts, ADR-019)", results.get("targets_fleet") or []),
        ("Targets (round 3: the floor, the tail, the web CPU, the pages as data grows)", results.get("targets_floor") or []),
        ("Targets (backups, ADR-016)", results.get("targets_backup") or []),
    ):
        if not checked:
            continue
        lines += [title, f"    {'target':<52} {'measured':>16}   {'goal':<15} verdict"]
        for t in checked:
            verdict = "not measured" if t["met"] is None else ("met" if t["met"] else "NOT met")
            lines.append(f"    {t['target']:<52} {_fmt(t['measured'], t['unit']):>16}   {t['goal']:<15} {verdict}")
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def write_json(results: dict) -> Path:
    """Write the run to bench/results/<timestamp>.json and return the path."""
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.fromisoformat(results["started_at"]).strftime("%Y%m%dT%H%M%S")
    path = RESULTS / f"{stamp}.json"
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False, default=str) + "\n")
    return path
