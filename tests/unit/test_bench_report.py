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
    measured = {t["target"]: (round(t["measured"], 3), t["met"]) for t in checked}
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
