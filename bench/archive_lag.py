"""Archive lag over many commits (ADR-016, "Measured"): the time from a commit to the arrival in the archive of
the WAL segment holding it, as p50 / p99 / max, with archive_timeout as make run sets it (a tenth under
BACKUP_MAX_LAG_S, nexo/backup/archive.py).

    BACKUP_MAX_LAG_S=60 .venv/bin/python bench/archive_lag.py [MINUTES] [RATE]     # default: 10 minutes, 50/s

A temporary NEXO_DATA_DIR with the embedded Postgres as make run keeps it and the bench's data
(bench/data.py). pgbench sends bench/order_floor.sql (create_order's own statements) at RATE orders/s
(-R, 8 clients) for MINUTES; meanwhile a probe commits a row about once a second, noting the segment its
commit is written to and the moment the commit returned; a watcher notes when each segment's file appears
in the archive (polled every 50 ms). Each probe's lag is its segment's arrival minus its commit.
RATE=0: only the probes write (a quiet shop): archive_timeout alone closes the segments. The same probe
runs in `BENCH_ONLY=backup make bench` (bench/backup.py archive_lag) on the growth database, with a verdict.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.backup import archive_lag, load  # noqa: E402
from tests.backup.kept import KeptDataDir  # noqa: E402


def main() -> int:
    minutes = float(sys.argv[1]) if len(sys.argv) > 1 else 10
    rate = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    place = KeptDataDir(max_lag_s=int(os.environ.get("BACKUP_MAX_LAG_S", "60")))
    try:
        place.start()
        data = load(place)
        seconds = int(minutes * 60)
        print(
            f"load average at start {os.getloadavg()}, {os.cpu_count()} cores; BACKUP_MAX_LAG_S={place.settings.max_lag_s};"
            f" {rate} orders/s for {seconds} s",
            flush=True,
        )
        lag = archive_lag(place, data, seconds, rate)
    finally:
        place.close()
    if lag["pgbench"]:
        print(f"pgbench: {lag['pgbench']}")
    print(
        f"archive lag over {lag['commits']} commits ({lag['lost']} not archived in time), {lag['segments']} segments:"
        f" p50 {lag['p50_s']} s, p99 {lag['p99_s']} s, max {lag['max_s']} s"
        f" (bound BACKUP_MAX_LAG_S={lag['max_lag_s']}); load average at end {lag['load_after']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
