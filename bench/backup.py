"""(10) Backups (ADR-016, "Measured"; `BENCH_ONLY=backup make bench`, never part of the default run): what backing up
the growth database costs on this machine, with a verdict per goal.

A temporary NEXO_DATA_DIR with the embedded Postgres as make run keeps it (tests/backup/kept.py: archiving on,
archive_timeout a tenth under BACKUP_MAX_LAG_S, durable settings), the bench's data (bench/data.py) and the
growth history (bench/grow.py, 1,000,000 orders at full scale), loaded through the archive like any other
write, vacuumed, checkpointed and archived. Then, each timed as a person runs it:

- `make backup` (goal ≤ 60 s);
- `flask --app app backup verify` (goal ≤ 180 s, and its verdict must say the backup holds);
- an hour of orders at 50/s (180,000) written after that backup as fast as pgbench sends bench/order_floor.sql
  (create_order's own statements, 8 clients), the server stopped and `make restore --from` the backup
  (goal ≤ 120 s): the copy of the base backup and the replay of that WAL;
- the archive lag under 50 orders/s: a probe commits about once a second while pgbench sends order_floor.sql
  at that rate; each probe's lag is the arrival of its WAL segment in the archive minus its commit
  (goal p99 ≤ BACKUP_MAX_LAG_S, 10 s by default here so that the probe window can be short);
- the order form over HTTP at 8 clients against the same cluster with archiving on and off, alternated
  on-off-on-off (each after a restart) to show the noise: archiving may cost at most 10 % of orders/s and p99.

The HTTP comparison comes last: with archive_mode off the archive misses segments, so nothing after it may
restore. What differs from an hour in real time: the hour's orders come faster than 50/s, so archive_timeout
closes no half-empty segment and fewer checkpoints fall inside the stretch (fewer full-page images).
"""

from __future__ import annotations

import math
import os
import random
import subprocess
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
from psycopg.rows import dict_row

from bench import data as bench_data
from bench import floor, grow, order_entry
from bench.cpu import CpuMeter
from bench.load import percentile
from bench.pgbench import binary
from bench.web import log_in_all
from nexo.backup import archive
from nexo.db import Database

if TYPE_CHECKING:  # imported in run(): bench/report.py reads this module's verdicts without the test support's imports
    from tests.backup.kept import KeptDataDir

RATE = 50  # orders/s: the goal's "an hour of WAL at 50 orders/s" and the lag probe's load
HOUR_ORDERS = 3600 * RATE
CHUNK = 30_000  # orders per pgbench run: run_script allows a transaction-bounded pgbench 6 minutes
CLIENTS = 8  # the HTTP comparison's concurrency, as the other phases' reference row
LONG_S = 1800  # a command's or the archiver's limit at full size on a shared machine (the tests' 300 s is for small data)
GOALS = {"backup_s": 60, "verify_s": 180, "restore_s": 120, "archiving_cost": 0.10}


def say(message: str) -> None:
    print(f"[bench] {message}", flush=True)


# --- the cluster and its data (also bench/restore_replay.py and bench/archive_lag.py) ----------------------------


def load(place: KeptDataDir) -> bench_data.BenchData:
    """The Nexo morning and the bench's clients, SKUs and salespeople, with order_floor.sql's pick tables."""
    db = Database(place.url, max_size=2, name="bench-backup")
    try:
        data = bench_data.load(db, clients=200, skus=2000, salespeople=CLIENTS, password="nexo-demo")
        floor.load_picks(db, data)  # kept: every restored copy still has them
    finally:
        db.close()
    return data


def lsn(place: KeptDataDir) -> int:
    """The server's WAL position in bytes."""
    return int(place.query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint AS b")[0]["b"])


def write_orders(place: KeptDataDir, data: bench_data.BenchData, orders: int) -> int:
    """About `orders` orders (rounded up to the 8 clients) through order_floor.sql as fast as pgbench sends them."""
    written = 0
    while written < orders:
        per_client = math.ceil(min(CHUNK, orders - written) / floor.ORDER_CLIENTS)
        floor.run_script(
            place.url, floor.ORDER_SCRIPT, floor.order_constants(data), clients=floor.ORDER_CLIENTS, transactions=per_client
        )
        written += per_client * floor.ORDER_CLIENTS
    return written


def restore_since(place: KeptDataDir, name: str, start_lsn: int, timeout_s: float = 300) -> dict:
    """The WAL written since start_lsn archived, the server stopped, `make restore --from name` timed, and the
    restored server started again: the WAL replayed, the seconds and the load average before/after."""
    place.query("SELECT txid_current()")  # a commit: pg_switch_wal() right after a backup's own switch is a no-op
    wal = lsn(place) - start_lsn
    place.archive_now(timeout_s=timeout_s)
    place.stop()
    load_before = os.getloadavg()[0]
    began = time.monotonic()
    done = place.make("restore", "--from", name, timeout_s=timeout_s)
    took = time.monotonic() - began
    load_after = os.getloadavg()[0]
    if "restored in" not in done.stdout:
        raise SystemExit(done.stdout + done.stderr)
    place.start()
    return {"wal_mb": round(wal / 1e6, 1), "seconds": round(took, 1), "load": f"{load_before:.1f}/{load_after:.1f}"}


# --- the archive lag (also bench/archive_lag.py) ------------------------------------------------------------------


class Watcher(threading.Thread):
    """Notes the moment each archived segment's file first appears in the archive (polled every 50 ms)."""

    def __init__(self, wal_dir: Path):
        super().__init__(daemon=True)
        self.wal_dir, self.arrived, self.done = wal_dir, {}, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            now = time.time()
            for s in archive.segments(self.wal_dir):
                self.arrived.setdefault(s.name, now)
            time.sleep(0.05)


def archive_lag(place: KeptDataDir, data: bench_data.BenchData, seconds: int, rate: int) -> dict:
    """The lag from a commit to its segment in the archive, over probes about a second apart for `seconds`
    while pgbench sends order_floor.sql at `rate` orders/s (-R, 8 clients; 0: only the probes write).

    The probes are spread evenly in time, so the percentiles are those of a commit made at a random moment.
    A probe whose segment is not archived within five times the bound is counted as lost, not as a lag.
    """
    bound = place.settings.max_lag_s
    with psycopg.connect(place.url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS lag_probe (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())")
    place.archive_now()
    watcher = Watcher(place.settings.wal_dir)
    watcher.start()
    load_proc = None
    if rate:
        defines = [arg for name, value in floor.order_constants(data).items() for arg in ("-D", f"{name}={value}")]
        load_proc = subprocess.Popen(
            [binary(), "-n", "-M", "prepared", "-c", "8", "-j", "2", "-R", str(rate), "-T", str(seconds), *defines]
            + ["-f", str(floor.ORDER_SCRIPT), place.url],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    probes: list[tuple[float, str]] = []
    deadline = time.monotonic() + seconds
    with psycopg.connect(place.url) as conn:
        while time.monotonic() < deadline:
            with conn.transaction():
                conn.execute("INSERT INTO lag_probe DEFAULT VALUES")
                row = conn.execute("SELECT pg_walfile_name(pg_current_wal_insert_lsn())").fetchone()
            probes.append((time.time(), row[0] if row else ""))
            time.sleep(random.uniform(0.5, 1.5))
    pgbench = None
    if load_proc is not None:
        out, _ = load_proc.communicate(timeout=120)
        tps = [line for line in out.splitlines() if line.startswith("tps")]
        pgbench = tps[0] if tps else out[-300:]
    waited = time.monotonic()
    while probes[-1][1] not in watcher.arrived and time.monotonic() - waited < 5 * bound:
        time.sleep(0.1)
    watcher.done.set()
    lags = [watcher.arrived[s] - t for t, s in probes if s in watcher.arrived]

    def rounded(value: float | None) -> float | None:
        return None if value is None else round(value, 2)

    return {
        "seconds": seconds,
        "rate": rate,
        "max_lag_s": bound,
        "commits": len(lags),
        "lost": len(probes) - len(lags),
        "segments": len({s for _, s in probes}),
        "p50_s": rounded(percentile(lags, 50)),
        "p99_s": rounded(percentile(lags, 99)),
        "max_s": rounded(max(lags)) if lags else None,
        "pgbench": pgbench,
        "load_after": round(os.getloadavg()[0], 1),
    }


# --- the phase ------------------------------------------------------------------------------------------------------


def run(run) -> dict:
    """Every measurement of the module docstring, on a kept cluster of its own; the cluster is removed afterwards."""
    from tests.backup.kept import KeptDataDir

    began = time.monotonic()
    scale = run.scale
    place = KeptDataDir(max_lag_s=scale.backup_max_lag_s)
    found: dict = {"volume": asdict(scale.backup_volume), "max_lag_s": scale.backup_max_lag_s, "rate": RATE}
    try:
        place.start()
        # archiving_sql's archive_timeout (nexo/backup/archive.py archive_timeout_s), read back from the server.
        found["archive_timeout"] = place.query("SHOW archive_timeout")[0]["archive_timeout"]
        data = load(place)
        found["history"] = _grow(place, scale.backup_volume)
        found["backup"] = _backup(place)
        found["verify"] = _verify(place)
        found["restore"] = _restore(place, data, found["backup"]["name"], scale.backup_hour_orders)
        seconds = max(1, round(scale.backup_lag_minutes * 60))
        say(f"(10) archive lag: a probe a second for {seconds} s, {RATE} orders/s, BACKUP_MAX_LAG_S={scale.backup_max_lag_s}")
        found["lag"] = archive_lag(place, data, seconds, RATE)
        lag = found["lag"]
        say(f"  {lag['commits']} commits ({lag['lost']} lost): p50 {lag['p50_s']} s, p99 {lag['p99_s']} s, max {lag['max_s']} s")
        found["http"] = _http(run, place, data)
    finally:
        place.close()
    found["wall_s"] = round(time.monotonic() - began, 1)
    return found


def _grow(place: KeptDataDir, volume: grow.Volume) -> dict:
    say(
        f"(10) backups: loading {volume.orders:,} orders, {volume.dead_letters:,} dead letters, {volume.clients:,} clients,"
        f" {volume.skus:,} SKUs into a cluster archiving as make run's (BACKUP_MAX_LAG_S={place.settings.max_lag_s})"
    )
    start, began = lsn(place), time.monotonic()
    with psycopg.connect(place.url, row_factory=dict_row) as conn:
        rows = grow.load(conn, volume)
        conn.commit()
    with psycopg.connect(place.url, autocommit=True) as conn:
        grow.vacuum(conn)
        # A grown database's pages were flushed long ago: the backup's own fast checkpoint should not be the load's.
        conn.execute("CHECKPOINT")
    loaded = time.monotonic() - began
    # The archiver's backlog of the load, waited for here: the backup is timed, not the archiver catching up.
    place.archive_now(timeout_s=LONG_S)
    archived = time.monotonic() - began - loaded
    size = place.query("SELECT pg_database_size('postgres') AS b")[0]["b"]
    say(f"  loaded and vacuumed in {loaded:.1f} s, archived in {archived:.1f} s more; database {size / 1e6:,.0f} MB")
    return {
        "orders": rows.get("orders"),
        "load_s": round(loaded, 1),
        "archive_backlog_s": round(archived, 1),
        "wal_mb": round((lsn(place) - start) / 1e6, 1),
        "database_mb": round(size / 1e6, 1),
    }


def _backup(place: KeptDataDir) -> dict:
    say("(10) make backup")
    began = time.monotonic()
    done = place.make("backup", timeout_s=LONG_S)
    took = time.monotonic() - began
    name = done.stdout.strip().splitlines()[-1]
    size = sum(p.stat().st_size for p in (place.settings.base_dir / name).rglob("*") if p.is_file())
    say(f"  {name}: {took:.1f} s, {size / 1e6:,.0f} MB")
    return {"name": name, "seconds": round(took, 1), "size_mb": round(size / 1e6, 1)}


def _verify(place: KeptDataDir) -> dict:
    place.query("SELECT txid_current()")  # a commit, so that the switch below closes the backup's last segment
    place.archive_now()
    say("(10) flask --app app backup verify")
    began = time.monotonic()
    done = place.flask("verify", timeout_s=LONG_S)
    took = time.monotonic() - began
    lines = (done.stdout or done.stderr).strip().splitlines()
    verdict = lines[-1] if lines else f"exit status {done.returncode}, no output"
    holds = done.returncode == 0 and "holds" in verdict
    say(f"  {took:.1f} s: {verdict}")
    return {"seconds": round(took, 1), "verdict": verdict, "holds": holds}


def _restore(place: KeptDataDir, data: bench_data.BenchData, name: str, orders: int) -> dict:
    say(f"(10) {orders:,} orders through bench/order_floor.sql after the backup, then make restore --from {name}")
    start, began = lsn(place), time.monotonic()
    written = write_orders(place, data, orders)
    wrote = time.monotonic() - began
    restored = restore_since(place, name, start, timeout_s=LONG_S)
    say(f"  written in {wrote:.1f} s; WAL {restored['wal_mb']:,.1f} MB; make restore {restored['seconds']} s")
    return {"orders": written, "write_s": round(wrote, 1), **restored}


def set_archiving(place: KeptDataDir, on: bool) -> None:
    """archive_mode on or off, by ALTER SYSTEM and a restart (archive_mode is read only at start)."""
    mode = "on" if on else "off"
    with psycopg.connect(place.url, autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET archive_mode = {mode}")
    place.restart()
    if on:
        with psycopg.connect(place.url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")  # as make run after every start (ADR-016, "A checkpoint at every start")
    shown = place.query("SHOW archive_mode")[0]["archive_mode"]
    if shown != mode:
        raise RuntimeError(f"archive_mode is {shown} after the restart, not {mode}")


def _http(run, place: KeptDataDir, data: bench_data.BenchData) -> list[dict]:
    """The order form at 8 clients, archiving on, off, on, off: each run after a restart, on a web tier of its own."""
    scale, stack = run.scale, run.stack
    saved = dict(stack.env)
    stack.env["DATABASE_URL"] = place.url
    rows = []
    try:
        for i, on in enumerate((True, False, True, False), 1):
            set_archiving(place, on)
            url = stack.start_web()
            people = log_in_all(url, data.usernames[:CLIENTS], data.password)
            say(f"(10) HTTP order form, {CLIENTS} clients, archiving {'on' if on else 'off'} (run {i} of 4), {scale.entry_s:g} s")
            meter = CpuMeter(place.url, run.redis_url, {"gunicorn": [stack.web.pid]}, include_self="load generator")
            measured = order_entry.http(people, data, CLIENTS, scale.entry_s, scale.warmup_s, meter).as_dict()
            rows.append({"archiving": "on" if on else "off", **measured})
            stack.stop(stack.web)
    finally:
        if stack.web is not None:
            stack.stop(stack.web)
        stack.env.clear()
        stack.env.update(saved)
    return rows


# --- the verdicts and the printed lines (bench/report.py) ----------------------------------------------------------


def _mean(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return sum(values) / len(values) if values else None


def archiving_ratios(http: list[dict]) -> tuple[float | None, float | None]:
    """Orders/s and p99 with archiving on ÷ off, each the mean of its runs (None: not measured)."""
    on = [r for r in http if r["archiving"] == "on"]
    off = [r for r in http if r["archiving"] == "off"]
    ratios = []
    for key in ("per_s", "p99_ms"):
        with_, without = _mean(on, key), _mean(off, key)
        ratios.append(with_ / without if with_ is not None and without else None)
    return ratios[0], ratios[1]


def targets(results: dict) -> list[tuple]:
    """(name, value, goal, test, unit) for report._verdicts: the issue's goals for backups (ADR-016, "Measured")."""
    found = results.get("backup")
    if not found:
        return []
    backup, verify, restore, lag = (found.get(k) or {} for k in ("backup", "verify", "restore", "lag"))
    bound, lost = found["max_lag_s"], lag.get("lost", 0)
    rate, p99 = archiving_ratios(found.get("http") or [])
    cost = GOALS["archiving_cost"]
    return [
        ("make backup", backup.get("seconds"), f"≤ {GOALS['backup_s']} s", lambda v: v <= GOALS["backup_s"], "seconds"),
        ("flask backup verify", verify.get("seconds"), f"≤ {GOALS['verify_s']} s", lambda v: v <= GOALS["verify_s"], "seconds"),
        ("flask backup verify: its verdict", verify.get("holds"), "holds", lambda v: v is True, "verdict"),
        (f"make restore: base + {restore.get('orders') or 0:,} orders' WAL", restore.get("seconds"),
         f"≤ {GOALS['restore_s']} s", lambda v: v <= GOALS["restore_s"], "seconds"),
        (f"archive lag p99 at {RATE} orders/s, BACKUP_MAX_LAG_S={bound}", lag.get("p99_s"), f"≤ {bound} s, 0 lost",
         lambda v: v <= bound and lost == 0, "seconds"),
        ("HTTP form @8, archiving on ÷ off: orders/s", rate, f"≥ {(1 - cost) * 100:.0f} %", lambda v: v >= 1 - cost, "pct"),
        ("HTTP form @8, archiving on ÷ off: p99", p99, f"≤ {(1 + cost) * 100:.0f} %", lambda v: v <= 1 + cost, "pct"),
    ]  # fmt: skip


def _spread(http: list[dict]) -> str:
    """Each arm's lowest and highest orders/s: the noise between runs of one setting, to read the ratio against."""
    arms = []
    for mode in ("on", "off"):
        rates = [r["per_s"] for r in http if r["archiving"] == mode]
        if rates:
            arms.append(f"{mode} {min(rates):.1f}–{max(rates):.1f}")
    return "orders/s within each setting: " + ", ".join(arms)


def table(found: dict) -> list[str]:
    """The phase's lines for report.table."""
    v, history = found["volume"], found.get("history") or {}
    backup, verify, restore, lag = (found.get(k) or {} for k in ("backup", "verify", "restore", "lag"))
    lines = [
        f"(10) backups (ADR-016): the growth database, {v['orders']:,} orders, {v['dead_letters']:,} dead letters,"
        f" {v['clients']:,} clients, {v['skus']:,} SKUs ({history.get('database_mb', 0):,.0f} MB), loaded through the"
        f" archive in {history.get('load_s')} s (+ {history.get('archive_backlog_s')} s for the archiver to catch up)",
        f"    BACKUP_MAX_LAG_S={found['max_lag_s']} (archive_timeout {found.get('archive_timeout')}); phase wall time"
        f" {found.get('wall_s')} s",
    ]
    if v["orders"] < 1_000_000:
        lines.append(f"    not the goal's size: {v['orders']:,} orders instead of 1,000,000 (BENCH_BACKUP_VOLUME, BENCH_SCALE)")
    if backup:
        lines.append(
            f"    make backup                {backup['seconds']:>7.1f} s   {backup['name']}, {backup['size_mb']:,.0f} MB"
        )
    if verify:
        lines.append(f"    flask backup verify        {verify['seconds']:>7.1f} s   {verify['verdict']}")
    if restore:
        hour = "" if restore["orders"] >= HOUR_ORDERS else f" (an hour at {RATE}/s is {HOUR_ORDERS:,})"
        lines.append(
            f"    make restore --from it     {restore['seconds']:>7.1f} s   base + {restore['orders']:,} orders{hour}"
            f" written in {restore['write_s']} s by bench/order_floor.sql; WAL replayed {restore['wal_mb']:,.1f} MB;"
            f" load {restore['load']}"
        )
    if lag:
        lines.append(
            f"    archive lag over {lag['commits']} commits ({lag['lost']} lost, {lag['segments']} segments),"
            f" {lag['rate']} orders/s for {lag['seconds']} s: p50 {lag['p50_s']} s, p99 {lag['p99_s']} s,"
            f" max {lag['max_s']} s at BACKUP_MAX_LAG_S={lag['max_lag_s']}"
        )
    http = found.get("http") or []
    if http:
        lines += [
            f"    HTTP order form, {CLIENTS} clients, archiving alternated (each run after a restart)",
            "    run  archiving   orders/s    p50 ms    p99 ms   errors   CPU ms/order: gunicorn · postgres · redis · load gen.",
        ]
        for i, r in enumerate(http, 1):
            cpu = r.get("cpu_ms_per_op") or {}
            parts = " · ".join(f"{cpu[k]:.1f}" for k in ("gunicorn", "postgres", "redis", "load generator") if k in cpu)
            lines.append(
                f"    {i:>3}  {r['archiving']:<9} {r['per_s']:>9.1f} {r['p50_ms'] or 0:>9.1f} {r['p99_ms'] or 0:>9.1f}"
                f" {r['errors']:>8}   {parts or '—'}"
            )
        rate, p99 = archiving_ratios(http)
        if rate is not None and p99 is not None:
            lines.append(f"    on ÷ off (means): orders/s {rate:.1%}, p99 {p99:.1%}; {_spread(http)}")
    return [*lines, ""]
