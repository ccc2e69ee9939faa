"""What the numbers were measured on: CPU, memory, server versions and the durability settings in force."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import redis

ROOT = Path(__file__).resolve().parent.parent
DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
SHOWN = ("fsync", "synchronous_commit", "full_page_writes", "shared_buffers", "max_connections", "wal_sync_method")


def make_durable(database_url: str) -> bool:
    """Turn fsync and synchronous commit back on in the bench's own throw-away embedded cluster.

    scripts/stack.py starts throw-away clusters with fsync off, which suits tests but is not what
    production runs; commit latency is one of the things this bench is about. A server given through
    DATABASE_URL is never reconfigured (BENCH_DURABLE=0 keeps the throw-away settings too).
    """
    if os.environ.get("BENCH_DURABLE", "1").strip() == "0":
        return False
    with psycopg.connect(database_url, autocommit=True) as conn:
        data_dir = conn.execute("SHOW data_directory").fetchone()[0]
        if "/nexo-pg-" not in data_dir:
            return False
        for name, value in DURABLE.items():
            conn.execute(f"ALTER SYSTEM SET {name} = {value}")
        conn.execute("SELECT pg_reload_conf()")
        for _ in range(100):  # the postmaster applies the reload asynchronously
            if conn.execute("SHOW fsync").fetchone()[0] == "on":
                return True
            time.sleep(0.05)
    return True


def describe(database_url: str, redis_url: str) -> dict:
    """The machine, the servers and their settings, as one JSON-friendly dict."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]
        settings = {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in SHOWN}
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": _memory_gb(),
        "os": platform.platform(terse=True),
        "python": sys.version.split()[0],
        "postgres": f"PostgreSQL {version}",
        "pg_settings": settings,
        "redis": redis.Redis.from_url(redis_url).info("server").get("redis_version"),
        "commit": _git_commit(),
        "load_before": load_average(),
    }


def load_average() -> str:
    """1/5/15-minute load averages: a busy machine makes every figure lower."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _git_commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=5, check=False
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
        return head + ("+uncommitted changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
