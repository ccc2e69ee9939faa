"""CPU seconds spent by each part of the system during a measurement (Linux /proc; Redis from INFO).

Throughput on a shared 2-core machine moves with whatever else runs; CPU time per operation does not
(much). It also says where a ceiling comes from: 2 cores ÷ (CPU per order of every part) is the most
this machine can do, whatever the concurrency.
"""

from __future__ import annotations

import contextlib
import os
import resource
from pathlib import Path

import psycopg
import redis

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()  # fields after the command name, starting at "state"


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # the process ended after its parent listed it (a run once ended here, 2026-12-07)
        return found
    for task in tasks:
        with contextlib.suppress(OSError):  # the task ended meanwhile
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def tree_seconds(pid: int) -> float:
    """CPU seconds of a process, its reaped children (cutime) and its live descendants."""
    fields = _stat(pid)
    if fields is None:
        return 0.0
    # utime, stime, cutime, cstime are fields 14-17 of /proc/pid/stat; here indexes 11-14.
    own = sum(int(x) for x in fields[11:15]) / _TICK
    return own + sum(tree_seconds(child) for child in _children(pid))


def postmaster_pid(database_url: str) -> int | None:
    """The local postmaster's pid (the parent of a backend), or None when the server is not on this host."""
    with psycopg.connect(database_url) as conn:
        backend = conn.info.backend_pid
        fields = _stat(backend)  # read while the backend still exists
        if fields is None or "postgres" not in Path(f"/proc/{backend}/comm").read_text():
            return None
        return int(fields[1])


class CpuMeter:
    """CPU seconds of named process trees, this process, Postgres and Redis between start() and stop()."""

    def __init__(
        self, database_url: str, redis_url: str, trees: dict[str, list[int]] | None = None, include_self: str | None = None
    ):
        self.redis = redis.Redis.from_url(redis_url)
        self.trees = dict(trees or {})
        postmaster = postmaster_pid(database_url)
        if postmaster:
            self.trees["postgres"] = [postmaster]
        self.include_self = include_self
        self._start: dict[str, float] = {}

    def _read(self) -> dict[str, float]:
        values = {name: sum(tree_seconds(p) for p in pids) for name, pids in self.trees.items()}
        info = self.redis.info("cpu")
        values["redis"] = float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
        if self.include_self:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            values[self.include_self] = usage.ru_utime + usage.ru_stime
        return values

    def start(self) -> CpuMeter:
        """Take the first reading."""
        self._start = self._read()
        return self

    def per_op(self, operations: int) -> dict[str, float]:
        """Milliseconds of CPU per operation for each part, since start()."""
        end = self._read()
        return {name: round((end[name] - self._start.get(name, 0.0)) * 1000 / max(1, operations), 2) for name in end}
