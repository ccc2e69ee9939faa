"""How long and how big each measurement is: BENCH_SCALE=full (default) or smoke, plus a few overrides."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from bench.grow import FULL, Volume

SMOKE_VOLUME = Volume(orders=50_000, dead_letters=5_000, clients=10_000, skus=50_000)


@dataclass(frozen=True)
class Scale:
    """Durations (seconds) and sizes of one bench run."""

    name: str
    pgbench_s: int  # per pgbench script
    pgbench_scale: int  # pgbench -s: 10 branches, 1,000,000 accounts
    entry_s: float  # per order-entry measurement (direct and HTTP), after the warm-up
    warmup_s: float  # discarded start of each order-entry measurement
    relay_events: int  # events delivered per relay throughput run
    latency_s: float  # how long orders arrive at latency_rate for the commit → ENTREGADO runs
    latency_rate: float  # orders per second during the latency runs (the latency target's: 50)
    clients: int = 200  # bench clients with huge credit limits (spread the credit row locks)
    skus: int = 200  # bench SKUs with huge stock (spread the stock row locks)
    buyers: int = 64  # hot-SKU buyers, and so the number of bench salespeople
    growth_volume: Volume = FULL  # the history the growth phase loads
    growth_entry_s: float = 6  # per order-entry measurement of the growth phase (twice: empty, grown)
    page_s: float = 3  # per page-load measurement of the growth phase
    mixed_rates: tuple = (50, 75, 100, 150, 200, 250, 300, 350, 400)  # orders/s of the mixed phase's steps
    mixed_step_s: float = 8  # seconds per step of the mixed phase
    backup_volume: Volume = FULL  # the history the backup phase backs up (ADR-016: the growth database)
    backup_hour_orders: int = 180_000  # orders written between the base backup and the restore: an hour at 50/s
    backup_lag_minutes: float = 2  # how long the archive lag is probed under a 50 orders/s load
    backup_max_lag_s: int = 10  # BACKUP_MAX_LAG_S of the backup phase's cluster: short, so the lag probe is short


SCALES = {
    "full": Scale(
        "full", pgbench_s=15, pgbench_scale=10, entry_s=15, warmup_s=2, relay_events=2000, latency_s=20, latency_rate=50
    ),
    "smoke": Scale(
        "smoke",
        pgbench_s=3,
        pgbench_scale=10,
        entry_s=3,
        warmup_s=1,
        relay_events=300,
        latency_s=4,
        latency_rate=50,
        growth_entry_s=2,
        page_s=1.5,
        mixed_rates=(50, 100, 200),
        mixed_step_s=3,
        growth_volume=SMOKE_VOLUME,
        backup_volume=SMOKE_VOLUME,
        backup_hour_orders=5_000,
        backup_lag_minutes=0.5,
    ),
}
VOLUMES = {"full": FULL, "smoke": SMOKE_VOLUME}  # BENCH_BACKUP_VOLUME's names


def from_env(env: dict | None = None) -> Scale:
    """The scale named by BENCH_SCALE, with BENCH_ENTRY_S / BENCH_PGBENCH_S / BENCH_RELAY_EVENTS / BENCH_LATENCY_S and
    the backup phase's BENCH_BACKUP_VOLUME (full, smoke) / BENCH_BACKUP_HOUR_ORDERS / BENCH_BACKUP_LAG_MINUTES /
    BENCH_BACKUP_LAG_S (else BACKUP_MAX_LAG_S) overrides."""
    env = os.environ if env is None else env
    name = env.get("BENCH_SCALE", "full").strip() or "full"
    if name not in SCALES:
        raise SystemExit(f"BENCH_SCALE={name!r} must be one of {', '.join(SCALES)}")
    scale = SCALES[name]
    overrides = {
        "entry_s": ("BENCH_ENTRY_S", float),
        "pgbench_s": ("BENCH_PGBENCH_S", int),
        "relay_events": ("BENCH_RELAY_EVENTS", int),
        "latency_s": ("BENCH_LATENCY_S", float),
        "backup_hour_orders": ("BENCH_BACKUP_HOUR_ORDERS", int),
        "backup_lag_minutes": ("BENCH_BACKUP_LAG_MINUTES", float),
        # The bench's own name first; else the Nexo setting a person may have exported for make run.
        "backup_max_lag_s": ("BENCH_BACKUP_LAG_S" if env.get("BENCH_BACKUP_LAG_S") else "BACKUP_MAX_LAG_S", int),
    }
    for field, (var, kind) in overrides.items():
        if env.get(var):
            scale = replace(scale, **{field: kind(env[var])})
    volume = env.get("BENCH_BACKUP_VOLUME", "").strip()
    if volume:
        if volume not in VOLUMES:
            raise SystemExit(f"BENCH_BACKUP_VOLUME={volume!r} must be one of {', '.join(VOLUMES)}")
        scale = replace(scale, backup_volume=VOLUMES[volume])
    return scale


# Phases that run only when BENCH_ONLY names them: the backup phase (ADR-016, "Measured") backs up, verifies and
# restores the growth database and writes an hour's orders in between: tens of minutes the default run must not grow by.
ON_REQUEST = {"backup"}


def phases(env: dict | None = None) -> set[str]:
    """The phases to run (BENCH_ONLY=pgbench,floor,direct,http,api,hot,relay,mixed,pgbouncer,growth,backup; default all
    but those ON_REQUEST), to iterate on one."""
    env = os.environ if env is None else env
    every = {"pgbench", "floor", "direct", "http", "api", "hot", "relay", "mixed", "pgbouncer", "growth"}
    chosen = {p.strip() for p in env.get("BENCH_ONLY", "").split(",") if p.strip()}
    unknown = chosen - every - ON_REQUEST
    if unknown:
        known = ", ".join(sorted(every | ON_REQUEST))
        raise SystemExit(f"BENCH_ONLY: unknown phase(s) {', '.join(sorted(unknown))}; choose from {known}")
    return chosen or every
