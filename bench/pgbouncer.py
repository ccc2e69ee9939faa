"""(9) PgBouncer in front (ADR-019): the order form over HTTP at 8 and 64 clients, straight to Postgres and
through PgBouncer in transaction mode (DB_PREPARE_THRESHOLD=none), with the server connections counted.

The question a fleet asks: with N web hosts the connections multiply (2 gunicorn workers × (pool 10 + 2
for the recorder) per host); PgBouncer holds the server side at its pool size whatever the clients. The
goal (ADR-019): 64 clients through PgBouncer on at most 20 server connections, within 10 % of the
direct figure at 8 clients. Debian's pgbouncer (scripts/ensure_cluster_tools.sh); it refuses to run as
root, so it runs as the account that owns the database's socket directory (or `postgres`).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from bench import order_entry
from bench.stack import free_port
from bench.web import log_in_all

CLIENTS = (8, 64)
POOL_SIZE = 20


def say(message: str) -> None:
    print(f"[bench] {message}", flush=True)


@contextlib.contextmanager
def pgbouncer(database_url: str):
    """PgBouncer in transaction mode in front of database_url; yields its URL."""
    binary = shutil.which("pgbouncer", path="/usr/sbin:/usr/bin") or shutil.which("pgbouncer")
    if binary is None:
        raise RuntimeError("pgbouncer is missing: run scripts/ensure_cluster_tools.sh")
    target = conninfo_to_dict(database_url)
    host, port, dbname = target.get("host") or "127.0.0.1", target.get("port") or "5432", target.get("dbname") or "postgres"
    user = target.get("user") or "postgres"
    account = pwd.getpwuid(os.stat(host).st_uid).pw_name if host.startswith("/") else "postgres"
    work = Path(tempfile.mkdtemp(prefix="nexo-bench-pgbouncer-"))
    listen = free_port()
    (work / "users.txt").write_text(f'"{user}" ""\n')
    (work / "pgbouncer.ini").write_text(
        f"[databases]\n{dbname} = host={host} port={port} dbname={dbname} user={user}\n[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {listen}\nunix_socket_dir =\nauth_type = trust\n"
        f"auth_file = {work}/users.txt\npool_mode = transaction\ndefault_pool_size = {POOL_SIZE}\n"
        f"max_client_conn = 1000\nlogfile = {work}/pgbouncer.log\n"
    )
    argv = [binary, str(work / "pgbouncer.ini")]
    if os.geteuid() == 0:
        shutil.chown(work, account)
        for path in work.iterdir():
            shutil.chown(path, account)
        argv = ["setpriv", f"--reuid={account}", f"--regid={pwd.getpwnam(account).pw_gid}", "--init-groups", *argv]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"postgresql://{user}@127.0.0.1:{listen}/{dbname}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(url, prepare_threshold=None, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"pgbouncer did not start; see {work}/pgbouncer.log") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


class ConnectionCount:
    """The most client backends the server had while the block ran (sampled every 0.2 s)."""

    def __init__(self, database_url: str):
        self.database_url = database_url
        self.most = 0
        self._stop = threading.Event()

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)

    def _sample(self) -> None:
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            while not self._stop.wait(0.2):
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
                ).fetchone()
                self.most = max(self.most, int(row[0]) if row else 0)


def run(run) -> dict:
    """Both paths at both concurrencies; returns {"direct": [...], "pgbouncer": [...]} with server connections."""
    scale, stack = run.scale, run.stack
    results: dict = {"pool_size": POOL_SIZE}
    with pgbouncer(run.database_url) as bouncer_url:
        for path, overrides in (("direct", {}), ("pgbouncer", {"DATABASE_URL": bouncer_url, "DB_PREPARE_THRESHOLD": "none"})):
            saved = dict(stack.env)
            stack.env.update(overrides)
            try:
                url = stack.start_web()
                people = log_in_all(url, run.data.usernames[: max(CLIENTS)], run.data.password)
                results[path] = []
                for n in CLIENTS:
                    say(f"(9) HTTP order form {path}, {n} client(s), {scale.entry_s:g} s")
                    with ConnectionCount(run.database_url) as count:
                        measured = order_entry.http(people, run.data, n, scale.entry_s, scale.warmup_s).as_dict()
                    results[path].append({**measured, "server_connections": count.most})
                stack.stop(stack.web)
            finally:
                stack.env.clear()
                stack.env.update(saved)
    return results


def _row(rows: list[dict], clients: int) -> dict | None:
    return next((r for r in rows if r["concurrency"] == clients), None)


def targets(results: dict) -> list[tuple]:
    """(name, value, goal, test, unit) for report._verdicts: the server connections and the throughput kept."""
    found = results.get("pgbouncer")
    if not found:
        return []
    direct8, bounced64 = _row(found.get("direct", []), 8), _row(found.get("pgbouncer", []), 64)
    ratio = bounced64["per_s"] / direct8["per_s"] if direct8 and bounced64 and direct8["per_s"] else None
    return [
        ("server connections, 64 clients via PgBouncer", bounced64 and bounced64["server_connections"], "≤ 20",
         lambda v: v <= POOL_SIZE, "connections"),
        ("orders/s, 64 via PgBouncer ÷ 8 direct", ratio, "≥ 90 %", lambda v: v >= 0.9, "pct"),
    ]  # fmt: skip


def table(found: dict) -> list[str]:
    """The phase's lines for report.table."""
    header = f"    {'path':<10} {'clients':>7} {'orders/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} {'server conns':>13}"
    lines = ["(9) PgBouncer in front (transaction mode, pool of 20): HTTP order form", header]
    for path in ("direct", "pgbouncer"):
        for r in found.get(path, []):
            lines.append(
                f"    {path:<10} {r['concurrency']:>7} {r['per_s']:>9.1f} {r['p50_ms'] or 0:>8.1f} {r['p99_ms'] or 0:>8.1f}"
                f" {r['errors']:>7} {r['server_connections']:>13}"
            )
    return [*lines, ""]
