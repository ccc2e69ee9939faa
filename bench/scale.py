"""How long and how big each measurement is: BENCH_SCALE=full (default) or smoke, plus a few overrides."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from bench.grow import FULL, Volume


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
    mixed_rates: tuple = (50, 75, 100, 150, 200, 250, 300)  # orders/s of the mixed phase's steps
    mixed_step_s: float = 8  # seconds per step of the mixed phase


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
        growth_volume=Volume(orders=50_000, dead_letters=5_000, clients=10_000, skus=50_000),
    ),
}


def from_env(env: dict | None = None) -> Scale:
    """The scale named by BENCH_SCALE, with BENCH_ENTRY_S / BENCH_PGBENCH_S / BENCH_RELAY_EVENTS overrides."""
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
    }
    for field, (var, kind) in overrides.items():
        if env.get(var):
            scale = replace(scale, **{field: kind(env[var])})
    return scale


def phases(env: dict | None = None) -> set[str]:
    """The phases to run (BENCH_ONLY=pgbench,direct,http,api,hot,relay,mixed,pgbouncer,growth; default all), to iterate on one."""
    env = os.environ if env is None else env
    every = {"pgbench", "direct", "http", "api", "hot", "relay", "mixed", "pgbouncer", "growth"}
    chosen = {p.strip() for p in env.get("BENCH_ONLY", "").split(",") if p.strip()}
    unknown = chosen - every
    if unknown:
        raise SystemExit(f"BENCH_ONLY: unknown phase(s) {', '.join(sorted(unknown))}; choose from {', '.join(sorted(every))}")
    return chosen or every
