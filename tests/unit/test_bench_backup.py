"""make bench's backup phase (bench/backup.py, ADR-016 "Measured"): run only when asked for, sized by its settings,
and judged goal by goal from the run's own figures."""

from __future__ import annotations

import pytest

from bench import report
from bench import scale as scales
from bench.grow import FULL


def test_the_backup_phase_runs_only_when_bench_only_names_it():
    every = scales.phases({})
    assert "backup" not in every and "growth" in every  # the default make bench does not grow by it
    assert scales.phases({"BENCH_ONLY": "backup"}) == {"backup"}
    assert scales.phases({"BENCH_ONLY": "http, backup"}) == {"http", "backup"}
    with pytest.raises(SystemExit, match="backup"):  # the refusal lists it among the phases one may choose
        scales.phases({"BENCH_ONLY": "backups"})


def test_its_size_follows_the_scale_and_each_override():
    full = scales.from_env({})
    assert (full.backup_volume, full.backup_hour_orders, full.backup_lag_minutes, full.backup_max_lag_s) == (FULL, 180_000, 2, 10)
    smoke = scales.from_env({"BENCH_SCALE": "smoke"})
    assert (smoke.backup_volume.orders, smoke.backup_hour_orders, smoke.backup_lag_minutes) == (50_000, 5_000, 0.5)
    small = scales.from_env(
        {"BENCH_BACKUP_VOLUME": "smoke", "BENCH_BACKUP_HOUR_ORDERS": "7000", "BENCH_BACKUP_LAG_MINUTES": "0.25"}
    )
    assert (small.backup_volume.orders, small.backup_hour_orders, small.backup_lag_minutes) == (50_000, 7_000, 0.25)
    assert scales.from_env({"BACKUP_MAX_LAG_S": "60"}).backup_max_lag_s == 60  # the setting make run would use
    assert scales.from_env({"BACKUP_MAX_LAG_S": "60", "BENCH_BACKUP_LAG_S": "5"}).backup_max_lag_s == 5  # the bench's own wins
    with pytest.raises(SystemExit, match="BENCH_BACKUP_VOLUME"):
        scales.from_env({"BENCH_BACKUP_VOLUME": "huge"})


def _found(**changes) -> dict:
    found = {
        "volume": FULL.__dict__,
        "max_lag_s": 10,
        "rate": 50,
        "archive_timeout": "9s",
        "wall_s": 900.0,
        "history": {"orders": 1_000_000, "load_s": 300.0, "archive_backlog_s": 20.0, "wal_mb": 4000.0, "database_mb": 3070.0},
        "backup": {"name": "20261201T100000Z", "seconds": 27.9, "size_mb": 3100.0},
        "verify": {"seconds": 87.0, "verdict": "verdict: 20261201T100000Z restores and holds (9 checks)", "holds": True},
        "restore": {"orders": 180_000, "write_s": 300.0, "wal_mb": 1574.0, "seconds": 36.5, "load": "8.4/5.3"},
        "lag": {
            "seconds": 120,
            "rate": 50,
            "max_lag_s": 10,
            "commits": 120,
            "lost": 0,
            "segments": 14,
            "p50_s": 4.5,
            "p99_s": 9.4,
            "max_s": 9.6,
            "pgbench": None,
            "load_after": 3.0,
        },
        "http": [
            {"archiving": "on", "per_s": 95.0, "p50_ms": 60.0, "p99_ms": 210.0, "errors": 0, "cpu_ms_per_op": {"gunicorn": 5.0}},
            {"archiving": "off", "per_s": 100.0, "p50_ms": 58.0, "p99_ms": 190.0, "errors": 0},
            {"archiving": "on", "per_s": 85.0, "p50_ms": 62.0, "p99_ms": 230.0, "errors": 0},
            {"archiving": "off", "per_s": 100.0, "p50_ms": 57.0, "p99_ms": 210.0, "errors": 0},
        ],
    }
    return {**found, **changes}


def test_each_goal_gets_its_verdict_from_the_run_and_the_table_prints_the_settings_next_to_the_figures():
    checked = report.targets_backup({"backup": _found()})
    verdicts = {t["target"]: (t["measured"], t["met"]) for t in checked}
    assert verdicts["make backup"] == (27.9, True)
    assert verdicts["flask backup verify"] == (87.0, True)
    assert verdicts["flask backup verify: its verdict"] == (True, True)
    assert verdicts["make restore: base + 180,000 orders' WAL"] == (36.5, True)
    assert verdicts["archive lag p99 at 50 orders/s, BACKUP_MAX_LAG_S=10"] == (9.4, True)
    rate, rate_met = verdicts["HTTP form @8, archiving on ÷ off: orders/s"]
    assert round(rate, 3) == 0.9 and rate_met is True  # (95 + 85) / 2 ÷ 100: the means of the alternated runs
    p99, p99_met = verdicts["HTTP form @8, archiving on ÷ off: p99"]
    assert round(p99, 3) == 1.1 and p99_met is True
    printed = report.table({**_machine(), "backup": _found(), "targets": [], "targets_backup": checked})
    assert "Targets (backups, ADR-016)" in printed
    assert "BACKUP_MAX_LAG_S=10 (archive_timeout 9s); phase wall time 900.0 s" in printed
    assert "verdict: 20261201T100000Z restores and holds" in printed
    assert "WAL replayed 1,574.0 MB" in printed
    assert "p50 4.5 s, p99 9.4 s, max 9.6 s at BACKUP_MAX_LAG_S=10" in printed
    assert "on ÷ off (means): orders/s 90.0%, p99 110.0%; orders/s within each setting: on 85.0–95.0, off 100.0–100.0" in printed
    assert "≥ 90 %" in printed and "≤ 110 %" in printed
    assert "not the goal's size" not in printed


def test_a_failed_verify_a_lost_probe_or_a_costly_archive_is_not_met_and_a_small_run_says_so():
    found = _found(
        verify={"seconds": 20.0, "verdict": "verdict: x FAILED: books", "holds": False},
        lag={**_found()["lag"], "lost": 1},
        http=[
            {"archiving": "on", "per_s": 80.0, "p50_ms": 50.0, "p99_ms": 100.0, "errors": 0},
            {"archiving": "off", "per_s": 100.0, "p50_ms": 50.0, "p99_ms": 100.0, "errors": 0},
        ],
        volume={**FULL.__dict__, "orders": 50_000},
        restore={"orders": 5_000, "write_s": 9.0, "wal_mb": 40.0, "seconds": 6.0, "load": "1.0/1.0"},
    )
    verdicts = {t["target"]: t["met"] for t in report.targets_backup({"backup": found})}
    assert verdicts["flask backup verify"] is True and verdicts["flask backup verify: its verdict"] is False
    assert verdicts["archive lag p99 at 50 orders/s, BACKUP_MAX_LAG_S=10"] is False  # p99 within, but a commit never came
    assert verdicts["HTTP form @8, archiving on ÷ off: orders/s"] is False
    printed = report.table({**_machine(), "backup": found, "targets": []})
    assert "not the goal's size: 50,000 orders instead of 1,000,000" in printed
    assert "base + 5,000 orders (an hour at 50/s is 180,000)" in printed
    assert report.targets_backup({}) == []  # the phase did not run: no rows at all


def _machine() -> dict:
    return {
        "started_at": "2026-12-01T00:00:00",
        "scale": {"name": "full"},
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
