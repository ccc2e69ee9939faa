"""make bench's verdicts for its second round of targets: computed from the run's own figures, one per target."""

from __future__ import annotations

from bench import report


def test_round_2_verdicts_read_cpu_per_unit_from_the_run_and_say_what_was_not_measured():
    results = {
        "pgbench": {"tpcb-like": {"tps": 1000.0}},
        "http": [{"concurrency": 8, "per_s": 120.0, "p99_ms": 40.0, "cpu_ms_per_op": {"gunicorn": 2.4, "postgres": 1.6}}],
        "direct": [
            {
                "concurrency": 8,
                "per_s": 250.0,
                "p99_ms": 9.0,
                "cpu_ms_per_op": {"create_order (bench process)": 0.8, "postgres": 0.9},
            }
        ],
        "relay_throughput": [{"workers": 2, "events_per_s": 510.0, "cpu_ms_per_event": {"workers": 0.9, "postgres": 0.7}}],
    }
    verdicts = {t["target"]: t["met"] for t in report.targets_round_2(results)}
    assert verdicts["HTTP, 8 clients: web CPU per order"] is True
    assert verdicts["HTTP, 8 clients: Postgres CPU per order"] is False
    assert verdicts["HTTP, 8 clients ÷ pgbench tpcb-like"] is True
    assert verdicts["direct, 8 threads: Python CPU per order"] is True
    assert verdicts["direct, 8 threads ÷ pgbench tpcb-like"] is False
    assert verdicts["relay, 2 workers: worker CPU per event"] is False
    assert verdicts["relay, 2 workers: Postgres CPU per event"] is True
    assert verdicts["relay, 2 workers"] is True
    # Phases that did not run (BENCH_ONLY) are not measured, not failed.
    assert verdicts["hot SKU: all 64 answered within"] is None
    assert verdicts["mixed: highest sustained rate"] is None
    printed = report.table({**_machine(), "targets": [], "targets_round_2": report.targets_round_2(results)})
    assert "Targets (round 2" in printed
    assert "relay, 2 workers: worker CPU per event" in printed and "0.90 ms" in printed


def _machine() -> dict:
    return {
        "started_at": "2026-12-01T00:00:00",
        "scale": {"name": "smoke"},
        "machine": {
            "cpu": "cpu",
            "cores": 2,
            "memory_gb": 1,
            "postgres": "PostgreSQL",
            "pg_settings": {},
            "redis": "7",
            "load_before": "0",
            "load_after": "0",
        },
    }


def test_floor_verdicts_are_each_paths_share_of_its_floor_and_the_table_prints_them():
    results = {
        "pgbench": {"clients": 8, "threads": 2, "scale": 10, "seconds": 3, **_pgbench(1000.0)},
        "order_floor": {
            "clients": 8,
            "seconds": 3,
            "orders_per_s": 400.0,
            "latency_ms": 20.0,
            "transactions": 1200,
            "confirmed": 1200,
            "cpu_ms_per_order": {"postgres": 1.5, "redis": 0.0},
        },
        "delivery_floor": {"clients": 4, "batch": 10, "events": 4000, "delivered": 4000, "seconds": 2.0, "events_per_s": 2000.0},
        "direct": [{"concurrency": 8, "per_s": 300.0, "p50_ms": 20.0, "p99_ms": 40.0, "errors": 0}],
        "http": [{"concurrency": 8, "per_s": 120.0, "p50_ms": 60.0, "p99_ms": 90.0, "errors": 0}],
        "relay_throughput": [{"workers": 2, "events": 300, "seconds": 0.3, "events_per_s": 900.0, "failed": 0}],
    }
    checked = report.targets_floor(results)
    measured = {t["target"]: (round(t["measured"], 3), t["met"]) for t in checked if t["measured"] is not None}
    assert measured["direct create_order @8 ÷ order floor @8"] == (0.75, True)
    assert measured["HTTP form @8 ÷ order floor @8"] == (0.3, False)
    assert measured["relay, 2 workers ÷ delivery floor"] == (0.45, False)
    printed = report.table({**results, **_machine(), "targets": [], "targets_floor": checked})
    assert "order floor, bench/order_floor.sql, 8 clients, 3 s: 400.0 orders/s (40.0 % of tpcb-like)" in printed
    assert "1200 orders CONFIRMADO of 1200 transactions, Postgres CPU 1.50 ms/order" in printed
    assert "delivery floor, bench/delivery_floor.sql, 4 lanes, batches of 10: 2,000.0 events/s" in printed
    # direct @8: 30.0 % of tpcb-like, 75.0 % of the floor, side by side on its row
    assert "30.0 %     75.0 %" in printed
    assert "relay, 2 workers ÷ delivery floor" in printed and "45.0 %" in printed
    assert report.targets_floor({"direct": results["direct"]})[0]["met"] is None  # no floor measured: not measured


def _pgbench(tps: float) -> dict:
    return {"tpcb-like": {"tps": tps, "latency_ms": 8.0}, "simple-update": {"tps": tps, "latency_ms": 8.0}}


def _page(cpu_ms: float, kb: float, errors: int = 0) -> dict:
    return {
        "cpu_ms_per_op": {"gunicorn": cpu_ms, "load generator": 9.0},
        "p50_ms": 5.0,
        "per_s": 100.0,
        "bytes": kb * 1024,
        "errors": errors,
    }


def test_round_3_verdicts_read_the_tail_the_web_cpu_and_growth_against_a_first_page():
    growth = {
        "first_page": {"GET /orders/new": _page(2.0, 12), "GET /credit/queue": _page(4.0, 80)},
        "grown": {"GET /orders/new": _page(2.2, 12), "GET /credit/queue": _page(6.4, 86)},
        "many_clients": {"clients": 101_205, "added": 90_000, "pages": {"GET /orders/new": _page(2.1, 41)}},
    }
    results = {
        "http": [{"concurrency": 8, "per_s": 120.0, "p99_ms": 90.0, "errors": 0, "cpu_ms_per_op": {"gunicorn": 1.4}}],
        "mixed": {"highest_sustained_rate": 300, "steps": [{"rate": 200, "p99_ms": 60.0}, {"rate": 250, "p99_ms": 101.0}]},
        "growth": growth,
    }
    measured = {t["target"]: (t["measured"], t["met"]) for t in report.targets_floor(results)}
    assert measured["mixed: highest sustained rate"] == (300, False)
    assert measured["mixed: POST p99 at 250 orders/s"] == (101.0, False)
    assert measured["HTTP @8: web CPU per order"] == (1.4, True)
    # the queue grew 1.6× (load generator's CPU left out); the form did not, but at 101,205 clients it is 41 KB
    assert measured["growth rows over 1.5×, first page → grown"] == (1, False)
    assert measured["GET /orders/new, 10,000 clients"] == (12 * 1024, True)
    assert measured["GET /orders/new, 100,000 clients"] == (41 * 1024, False)
    rows = {r["what"]: r for r in report.growth.verdicts(growth)}
    assert rows["GET /orders/new, 101,205 clients"]["ratio"] == 2.1 / 2.0
    # A phase that stopped below 250 orders/s measured no p99 there: not measured, not failed.
    stopped = {**results, "mixed": {"highest_sustained_rate": 150, "steps": [{"rate": 200, "p99_ms": 900.0}]}}
    assert {t["target"]: t["met"] for t in report.targets_floor(stopped)}["mixed: POST p99 at 250 orders/s"] is None


def test_the_sessions_split_names_the_largest_activities_and_sums_the_rest():
    from collections import Counter

    from bench.mixed import sessions_summary

    seen = Counter({"running": 50, "client": 30, "lock:transactionid": 10, "io:WalSync": 6, "lwlock:WALWrite": 4})
    summary = sessions_summary(seen, samples=20, top=3)
    assert summary == {
        "in_transaction_avg": 5.0,
        "share_pct": {"running": 50.0, "client": 30.0, "lock:transactionid": 10.0, "other": 10.0},
    }
    assert sessions_summary(Counter(), samples=20) is None  # nothing was ever in a transaction: no split to print


def test_what_the_cores_allow_is_cores_over_every_process_cpu_per_unit_and_the_goal_says_what_cpu_it_needs():
    # The figures of the full run of 2026-12-07 (docs/performance.md), rounded as printed there.
    results = {
        **_machine(),
        "order_floor": {"orders_per_s": 1678.9},
        "delivery_floor": {"events_per_s": 6714.7},
        "direct": [{"concurrency": 8, "per_s": 833.9, "cpu_ms_per_op": {"python": 0.9, "postgres": 1.1, "redis": 0.0}}],
        "http": [
            {
                "concurrency": 8,
                "per_s": 396.6,
                "cpu_ms_per_op": {"gunicorn": 2.9, "postgres": 1.5, "redis": 0.0, "load generator": 0.3},
            }
        ],
        "relay_throughput": [
            {
                "workers": 2,
                "events_per_s": 977.1,
                "cpu_ms_per_event": {"workers": 0.5, "fakes": 0.9, "postgres": 0.4, "redis": 0.0},
            }
        ],
        "mixed": {
            "highest_sustained_rate": 200,
            "steps": [
                {"rate": 150, "achieved_per_s": 149.6, "cpu_ms_per_order": {"gunicorn": 3.5}},
                {
                    "rate": 200,
                    "achieved_per_s": 199.7,
                    "cpu_ms_per_order": {"gunicorn": 3.1, "relay": 1.4, "fakes": 1.9, "postgres": 2.8},
                },
            ],
        },
    }
    rows = {r["path"]: r for r in report.cores.bounds(results)}
    direct = rows["direct create_order @8"]
    assert round(direct["allowed"]) == 1000  # 2 cores × 1000 ÷ 2.0 ms
    assert round(direct["of_bound"], 3) == 0.834
    assert round(direct["goal"], 1) == round(0.70 * 1678.9, 1)
    assert round(direct["goal_cpu_ms"], 2) == 1.70  # 2000 ÷ 1,175 orders/s
    http = rows["HTTP form @8"]
    assert round(http["allowed"]) == 426 and round(http["of_bound"], 2) == 0.93
    relay = rows["relay, 2 workers"]
    assert round(relay["fakes_allow"]) == 2222  # the fakes alone, on every core: a third of the goal
    assert round(relay["goal_cpu_ms"], 2) == 0.60
    mixed = rows["mixed at 200 orders/s"]  # the highest sustained step, not the first
    assert round(mixed["cpu_ms"], 1) == 9.2 and round(mixed["goal_cpu_ms"], 2) == 5.71
    assert mixed["fakes_allow"] is not None
    printed = "\n".join(report.cores.table(results))
    assert "the fakes alone allow 2,222 events/s, 66 % of the goal: out of reach" in printed
    assert printed.count("the fakes alone") == 1  # the mixed phase's fakes would allow 1,053 orders/s: not a limit
    # A phase that did not run has no row; a run with no phase has no table.
    assert "HTTP form @8" not in {r["path"] for r in report.cores.bounds({**_machine(), "direct": results["direct"]})}
    assert report.cores.table(_machine()) == []
    # make bench prints it before the targets
    direct_only = {**_machine(), "targets": [], "direct": [{**results["direct"][0], "p50_ms": 8.0, "p99_ms": 24.0, "errors": 0}]}
    assert "What the 2 cores allow" in report.table(direct_only)
