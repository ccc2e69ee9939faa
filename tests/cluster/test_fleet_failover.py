"""Guarantee 23 on a small fleet (ADR-019): a Patroni failover and a Redis Sentinel failover under orders.

Two Nexo hosts (`scripts/stack.py run`, as `make run` starts them), each with its own NEXO_HOST_ID and
roles: host-a (web, relay) reaches Postgres through PgBouncer in transaction mode, host-b (web,
sweeper, maintenance) straight through libpq's multi-host URL. Orders stream in through both webs while
the relay delivers; the leader's whole host dies (its Patroni and its PostgreSQL, kill -9), then the Redis
master stops. Then: every order that got its 303 is there once, each event reached its fake once, stock
and credit add up, no answer was a 500 (503 during the failover is the contract), no program of Nexo
restarted, and both webs took orders again within 30 s of the leader's host dying.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
import requests

from nexo import migrations
from tests.cluster import servers
from tests.cluster.load import OrderStream
from tests.helpers import ROOT, free_port
from tests.stack_run import RunningStack, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.no_db]
RECOVERY_GOAL_S = 30.0
SECRET_KEY = "cluster-test-secret-key-0123456789"


@pytest.fixture(scope="module")
def cluster():
    missing = servers.missing_tools()
    if missing:
        pytest.skip(f"cluster tools missing: {', '.join(missing)} (scripts/ensure_cluster_tools.sh installs them)")
    if os.geteuid() != 0:
        pytest.skip("the cluster test runs PostgreSQL and PgBouncer as the postgres account: it needs root")
    running = servers.Cluster()
    try:
        running.start_etcd()
        running.start_patroni()
        running.start_pgbouncer()
        running.start_redis()
        yield running
    except BaseException:
        for name in ("etcd", "patroni-pg1", "patroni-pg2", "pgbouncer", "sentinel"):
            print(f"--- {name}\n{running.log(name)}")
        raise
    finally:
        running.close()


class Host(RunningStack):
    """One Nexo host: `scripts/stack.py run` with its roles, pointed at the cluster."""

    def __init__(self, extra_env: dict):
        port = free_port()
        super().__init__({**extra_env, "PORT": str(port)})
        self.url = f"http://127.0.0.1:{port}"

    def wait_ready(self) -> None:
        wait_for(lambda: self.proc.poll() is None and "Nexo: http" in self.text(), 120, "make run started its programs")
        wait_for(self._ready, 90, "/readyz 200")
        wait_for(self.all_running, 60, "every program RUNNING")

    def _ready(self) -> bool:
        assert self.proc.poll() is None, self.text()[-3000:]
        try:
            return requests.get(self.url + "/readyz", timeout=3).status_code == 200
        except requests.RequestException:
            return False

    def pids(self) -> dict[str, int]:
        return {p["name"]: p["pid"] for p in self.supervisor("getAllProcessInfo")}


def _fake(kind: str, tmp_path: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", f"sandbox.{kind}", "--port", str(port), "--db", str(tmp_path / f"{kind}.sqlite3")],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: _answers(url + "/__sandbox/effects"), 30, f"the {kind} fake answers")
    return proc, url


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _flask(env: dict, *args: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "flask", "--app", "app", *args]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def _migrate_through_the_pooler(cluster, tmp_path: Path) -> None:
    """Two `db upgrade`s at once through PgBouncer, under load: each file once, no hang (a session lock would)."""
    directory = tmp_path / "migrations"
    shutil.copytree(ROOT / "migrations", directory)
    (directory / "9990_cluster_probe.sql").write_text("CREATE TABLE cluster_probe (x int); INSERT INTO cluster_probe VALUES (1);")
    (directory / "9991_cluster_index.sql").write_text(
        "-- nexo: no-transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS cluster_orders_created_idx ON orders (created_at);\n"
    )
    applied: list = []
    runs = [
        threading.Thread(target=lambda: applied.append(migrations.upgrade(cluster.bouncer_url(), directory))) for _ in range(2)
    ]
    for run in runs:
        run.start()
    for run in runs:
        run.join(timeout=60)
    assert not any(run.is_alive() for run in runs), "db upgrade through PgBouncer hung"
    assert sorted(v for done in applied for v in done) == ["9990_cluster_probe", "9991_cluster_index"]


def _host_env(cluster, fiscal_url: str, warehouse_url: str) -> dict:
    return {
        "SECRET_KEY": SECRET_KEY,
        "NEXO_ENV": "demo",
        "REDIS_URL": "redis://127.0.0.1:1/0",  # the host is Sentinel's to name; the database number is this one
        "REDIS_SENTINELS": f"127.0.0.1:{cluster.ports['sentinel']}",
        "REDIS_SENTINEL_MASTER": "nexo",
        "FISCAL_URL": fiscal_url,
        "WAREHOUSE_URL": warehouse_url,
        "DATABASE_MIGRATION_URL": cluster.direct_url(),
        "RELAY_WORKERS": "1",
        "WEB_WORKERS": "1",
        "WEB_THREADS": "8",
        "DB_POOL_TIMEOUT_S": "3",
        "DB_DEAD_PEER_S": "6",
    }


def _fail_over(cluster, stream: OrderStream, hosts: dict, say) -> dict[str, float]:
    """Kill the leader's host, then stop the Redis master; return how long each web took to take orders again."""
    leader = cluster.leader()
    cluster.kill_host(leader)
    killed_at = time.monotonic()  # after: finding the processes to kill takes a moment, orders go on meanwhile
    recovered = {
        name: wait_for(lambda name=name: stream.first_created_after(killed_at, name), 90, f"{name} takes orders again")
        - killed_at
        for name in hosts
    }
    say(
        f"Patroni failover ({leader}'s host killed): orders again after "
        + ", ".join(f"{n} {s:.1f} s" for n, s in recovered.items())
    )
    wait_for(lambda: cluster.leader() not in (None, leader), 30, "the other node leads")
    redis_stopped_at = time.monotonic()
    cluster.stop_redis("redis1")
    wait_for(lambda: cluster.redis_master() == cluster.ports["redis2"], 30, "Sentinel promoted the replica")
    promoted_at = time.monotonic()
    say(f"Redis Sentinel failover: a new master {promoted_at - redis_stopped_at:.1f} s after the old one stopped")
    for name, host in hosts.items():
        wait_for(lambda name=name: len(stream.created(since=promoted_at, host=name)) >= 5, 60, f"{name} orders after it")
        wait_for(lambda host=host: requests.get(host.url + "/readyz", timeout=5).json()["redis"] == "ok", 30, "Redis ok")
    return recovered


def _check_books(cluster, created: set[str], since, fakes: dict[str, str], env: dict) -> None:
    """Every order that got its 303 is kept and no other was made since the stream began (a form a 503
    answered and sent again is one order, whether its first try committed or not), each event reached its
    fake once, nothing restarted, the books add up."""
    with psycopg.connect(cluster.direct_url(), autocommit=True) as conn:
        wait_for(lambda: _undelivered(conn) == 0, 120, "every event delivered")
        kept = conn.execute("SELECT id::text FROM orders WHERE id = ANY(%s::uuid[])", [list(created)]).fetchall()
        assert len(kept) == len(created), "an order that got its 303 is missing"
        made = {r[0] for r in conn.execute("SELECT id::text FROM orders WHERE created_at >= %s", [since]).fetchall()}
        assert made == created, f"{len(made - created)} order(s) no answer named"
        delivered = conn.execute("SELECT id::text, destination FROM outbox_event WHERE status = 'ENTREGADO'").fetchall()
        restarts = conn.execute(
            "SELECT host, program, kind FROM process_event WHERE kind IN ('exited', 'backoff', 'fatal', 'worker_exited')"
        ).fetchall()
    for destination, url in fakes.items():
        keys = [e["key"] for e in requests.get(url + "/__sandbox/effects", timeout=10).json()]
        assert sorted(keys) == sorted(i for i, d in delivered if d == destination), f"{destination}: not each event once"
    checked = _flask({**env, "DATABASE_URL": cluster.direct_url()}, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert restarts == [], restarts


def test_orders_survive_a_patroni_failover_and_a_sentinel_failover_without_a_restart(cluster, tmp_path, capsys):
    def say(line: str) -> None:
        with capsys.disabled():
            print(f"\n[cluster] {line}", flush=True)

    fiscal, fiscal_url = _fake("fiscal", tmp_path)
    warehouse, warehouse_url = _fake("warehouse", tmp_path)
    common = _host_env(cluster, fiscal_url, warehouse_url)
    env = {**os.environ, **common, "DATABASE_URL": cluster.direct_url()}
    for args in (("db", "upgrade"), ("demo", "load", "--if-empty")):
        done = _flask(env, *args)
        assert done.returncode == 0, done.stdout + done.stderr
    through_the_pooler = {"DATABASE_URL": cluster.bouncer_url(), "DB_PREPARE_THRESHOLD": "none"}
    hosts = {
        "host-a": Host({**common, "NEXO_HOST_ID": "host-a", "NEXO_ROLES": "web,relay", **through_the_pooler}),
        "host-b": Host(
            {**common, "NEXO_HOST_ID": "host-b", "NEXO_ROLES": "web,sweeper,maintenance", "DATABASE_URL": cluster.direct_url()}
        ),
    }
    try:
        for host in hosts.values():
            host.wait_ready()
        pids = {name: host.pids() for name, host in hosts.items()}
        with psycopg.connect(cluster.direct_url(), autocommit=True) as conn:
            began = conn.execute("SELECT now()").fetchone()[0]  # the database's clock, which created_at reads
        with OrderStream({name: host.url for name, host in hosts.items()}, ["vendedor1", "vendedor2"]) as stream:
            for name in hosts:
                wait_for(lambda name=name: len(stream.created(host=name)) >= 10, 60, f"orders through {name}")
            _migrate_through_the_pooler(cluster, tmp_path)
            recovered = _fail_over(cluster, stream, hosts, say)
        resent = stream.resend_unanswered()
        statuses = stream.statuses()
        say(f"answers: {dict(statuses)}; forms sent again after a 503: {len(resent)}; connection errors: {dict(stream.errors)}")
        assert not [k for k in statuses if k[1] >= 500 and k[1] != 503], statuses
        assert not stream.errors, stream.errors  # no web host stopped answering
        for name, seconds in recovered.items():
            assert seconds < RECOVERY_GOAL_S, f"{name} took {seconds:.1f} s to take orders again"
        _check_books(cluster, set(stream.created()), began, {"fiscal": fiscal_url, "warehouse": warehouse_url}, env)
        assert {name: host.pids() for name, host in hosts.items()} == pids, "a program of Nexo was restarted"
    finally:
        for host in hosts.values():
            host.close()
        for proc in (fiscal, warehouse):
            proc.kill()
            proc.wait(timeout=10)


def _undelivered(conn) -> int:
    row = conn.execute("SELECT count(*) FROM outbox_event WHERE status <> 'ENTREGADO'").fetchone()
    return int(row[0]) if row else -1
