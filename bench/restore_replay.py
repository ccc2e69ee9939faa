"""Restore time against the WAL it replays (ADR-016, "Measured"): the goal is a restore of a base backup plus
an hour of WAL at 50 orders/s within 120 s, too long to run each time; this measures a few smaller sizes
and extrapolates.

    .venv/bin/python bench/restore_replay.py [MINUTES ...]     # default: 0 2 5 10

A temporary NEXO_DATA_DIR with the embedded Postgres as make run keeps it (archiving on, BACKUP_MAX_LAG_S
default 60) and the bench's data (bench/data.py). For each size: `make backup`; MINUTES × 60 × 50 orders
written as fast as pgbench can send bench/order_floor.sql (create_order's own statements, 8 clients); the
segment closed and archived; the server stopped; `make restore` timed (copy of the base backup, replay of
every archived segment since, promote, checkpoint, stop); the server started again for the next size.
A least-squares line through (WAL bytes, seconds) is extrapolated to an hour's orders. The hour itself, on
the growth database, with a verdict: `BENCH_ONLY=backup make bench` (bench/backup.py, whose steps this reuses).

What differs from an hour at 50/s in real time: the orders come faster, so archive_timeout closes no
half-empty segment (an hour of them adds 60 segments, mostly zeros, gzipped) and fewer checkpoints fall
inside the stretch (fewer full-page images). The load average is printed next to each restore: the
machine is shared.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import data as bench_data  # noqa: E402
from bench.backup import HOUR_ORDERS, RATE, load, lsn, restore_since, write_orders  # noqa: E402
from tests.backup.kept import KeptDataDir  # noqa: E402


def one_size(place: KeptDataDir, data: bench_data.BenchData, minutes: float) -> dict:
    name = place.make("backup").stdout.strip().splitlines()[-1]
    start = lsn(place)
    started = time.monotonic()
    orders = write_orders(place, data, int(minutes * 60 * RATE))
    wrote_s = time.monotonic() - started
    restored = restore_since(place, name, start)
    row = {
        "minutes": minutes,
        "orders": orders,
        "write_s": round(wrote_s, 1),
        "wal_mb": restored["wal_mb"],
        "restore_s": restored["seconds"],
        "load": restored["load"],
    }
    print(
        f"{minutes:>5} min  {orders:>7} orders (written in {wrote_s:5.1f} s)  WAL {row['wal_mb']:7.1f} MB"
        f"  make restore {row['restore_s']:6.1f} s  load {row['load']}",
        flush=True,
    )
    return row


def fit(rows: list[dict]) -> tuple[float, float]:
    """Least squares seconds = a + b × MB of WAL."""
    xs, ys = [r["wal_mb"] for r in rows], [r["restore_s"] for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return my - b * mx, b


def main() -> int:
    sizes = [float(a) for a in sys.argv[1:]] or [0, 2, 5, 10]
    place = KeptDataDir(max_lag_s=int(os.environ.get("BACKUP_MAX_LAG_S", "60")))
    try:
        place.start()
        data = load(place)
        print(f"load average at start {os.getloadavg()}, {os.cpu_count()} cores; BACKUP_MAX_LAG_S={place.settings.max_lag_s}")
        rows = [one_size(place, data, m) for m in sizes]
    finally:
        place.close()
    a, b = fit(rows)
    with_orders = [r for r in rows if r["orders"]]
    mb_per_order = sum(r["wal_mb"] for r in with_orders) / sum(r["orders"] for r in with_orders)
    hour_mb = HOUR_ORDERS * mb_per_order
    print(
        f"fit: restore ≈ {a:.1f} s + {b * 1000:.1f} s per GB of WAL; {mb_per_order * 1e6 / 1024:.1f} kB of WAL per order;"
        f" an hour at {RATE}/s ({HOUR_ORDERS} orders) ≈ {hour_mb / 1000:.2f} GB → restore ≈ {a + b * hour_mb:.0f} s (goal 120)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
