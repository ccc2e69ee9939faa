"""Load generation and the numbers taken from it: closed-loop threads, percentiles, one Measurement."""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0..100) by the nearest-rank method; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass
class Measurement:
    """One throughput measurement: completed operations in a window, their latency and the failures."""

    name: str
    concurrency: int
    completed: int
    errors: int
    seconds: float
    p50_ms: float | None
    p99_ms: float | None
    error_samples: list[str]
    cpu_ms_per_op: dict[str, float] | None = None  # CPU of each part per operation, warm-up included

    @property
    def per_s(self) -> float:
        """Successful operations per second in the window."""
        return self.completed / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict:
        """JSON-friendly form, with the rate included."""
        return {**asdict(self), "per_s": round(self.per_s, 1)}


def closed_loop(
    name: str,
    concurrency: int,
    setup: Callable[[int], object],
    operation: Callable[[object, random.Random], tuple[bool, str | None]],
    duration_s: float,
    warmup_s: float,
    meter=None,
) -> Measurement:
    """Run `concurrency` threads, each repeating operation(state, rng) back to back; measure after the warm-up.

    setup(i) builds thread i's state (a session, a login) before the clock starts. operation returns
    (ok, error description). Only operations that start after the warm-up and finish before the end
    count, so the window holds no half-measured requests. A meter (bench.cpu.CpuMeter) is read when
    the clock starts and when the threads are done, and divided by every operation in between.
    """
    states = [None] * concurrency
    lock = threading.Lock()
    latencies: list[float] = []
    errors: list[str] = []
    window: dict[str, float] = {}
    finished_ops = [0]

    def open_window() -> None:
        # The barrier's action runs once every thread is set up, before any is released: the clock starts here.
        if meter is not None:
            meter.start()
        now = time.perf_counter()
        window.update(start=now + warmup_s, end=now + warmup_s + duration_s)

    ready = threading.Barrier(concurrency + 1, action=open_window)

    def run(i: int) -> None:
        rng = random.Random(i * 7919 + concurrency)
        try:
            states[i] = setup(i)
        finally:
            ready.wait()
        start, end = window["start"], window["end"]
        while True:
            began = time.perf_counter()
            if began >= end:
                return
            try:
                ok, error = operation(states[i], rng)
            except Exception as exc:  # a failed request is a measured error, not a crashed bench
                ok, error = False, f"{type(exc).__name__}: {exc}"[:200]
            finished = time.perf_counter()
            with lock:
                finished_ops[0] += 1
            if began >= start and finished <= end:
                with lock:
                    if ok:
                        latencies.append(finished - began)
                    else:
                        errors.append(error or "?")

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    ready.wait()
    for thread in threads:
        thread.join(timeout=warmup_s + duration_s + 120)
    ms = [x * 1000 for x in latencies]
    return Measurement(
        name=name,
        concurrency=concurrency,
        completed=len(latencies),
        errors=len(errors),
        seconds=duration_s,
        p50_ms=_round(percentile(ms, 50)),
        p99_ms=_round(percentile(ms, 99)),
        error_samples=sorted(set(errors))[:5],
        cpu_ms_per_op=meter.per_op(finished_ops[0]) if meter is not None else None,
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
