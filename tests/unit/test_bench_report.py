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
    assert "Targets (issue 14" in printed
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
