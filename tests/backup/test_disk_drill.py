"""The disk drill (ADR-016): `make run` with orders flowing and its backups on "another disk"; the whole
process tree killed (-9) and Postgres's data directory removed; `make restore`; `make run` again. Every
order that got its 303 more than BACKUP_MAX_LAG_S before the crash is back, whole; stock and credit add
up; every event reaches its destination once (the fakes' storage is the outside world: not restored)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests

from tests.e2e.order_forms import form_data, order_id_from
from tests.helpers import ROOT, http_login
from tests.stack_run import RunningStack, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.no_db, pytest.mark.timeout(300)]

LAG_S = 2


def place_order(stack, seller) -> tuple[str, float]:
    page = seller.get(stack.url + "/orders/new", timeout=10).text
    response = seller.post(
        stack.url + "/orders/new", data=form_data(page, "Corralón del Sur", [("TOR-010", 1)]), allow_redirects=False, timeout=15
    )
    assert response.status_code == 303, response.text[:500]
    return order_id_from(response.headers["Location"]), time.time()


def run_here(args: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    """A command of this repository (`scripts/stack.py …`, `flask …`) as a person runs it; its output kept."""
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def kill_the_tree(stack: RunningStack) -> None:
    """SIGKILL make run and everything it started, as a power cut would, and wait until none is left."""
    os.kill(stack.proc.pid, signal.SIGKILL)
    for line in stack.leftovers():
        with contextlib.suppress(OSError):
            os.kill(int(line.split()[0]), signal.SIGKILL)
    stack.proc.wait(timeout=10)
    wait_for(lambda: not stack.leftovers(), 20, "no process of the first make run left")


def test_a_lost_data_directory_comes_back_from_the_other_disk(tmp_path_factory, capsys):
    other_disk = Path(tempfile.mkdtemp(prefix="nexo-other-disk-", dir="/tmp"))
    other_disk.chmod(0o711)  # the embedded server's own user writes the archive there
    backups = {"NEXO_BACKUP_DIR": str(other_disk / "backups"), "BACKUP_MAX_LAG_S": str(LAG_S)}
    first = RunningStack(backups)
    second = third = None
    try:
        first.wait_ready()
        env = {**os.environ, "NEXO_DATA_DIR": str(first.data_dir), **backups}
        env.pop("DATABASE_URL", None)
        taken = run_here(["scripts/stack.py", "backup"], env, 120)
        assert taken.returncode == 0, taken.stdout + taken.stderr
        seller = http_login(first.url, "vendedor1")
        placed = [place_order(first, seller) for _ in range(8)]
        audited = {r["id"] for r in first.query("SELECT id FROM audit_log")}  # the login's trail row among them
        time.sleep(LAG_S + 3)
        placed += [place_order(first, seller) for _ in range(2)]  # within the lag: may be lost
        crash = time.time()
        kill_the_tree(first)
        shutil.rmtree(first.data_dir / "postgres")

        started = time.monotonic()
        restored = run_here(["scripts/stack.py", "restore"], env, 180)
        restore_s = time.monotonic() - started
        assert restored.returncode == 0, restored.stdout + restored.stderr

        second = RunningStack({**backups, "NEXO_DATA_DIR": str(first.data_dir)})
        second.data_dir = first.data_dir  # the same NEXO_DATA_DIR: its passwords, its supervisor files
        second.wait_ready()
        present = {str(r["id"]) for r in second.query("SELECT id FROM orders")}
        must = [order for order, at in placed if at < crash - LAG_S]
        assert set(must) <= present, "an order older than the lag was lost"
        rows = second.query(
            "SELECT o.id::text, o.status, (SELECT count(*) FROM order_line l WHERE l.order_id = o.id) AS lines,"
            " (SELECT count(*) FROM stock_reservation r WHERE r.order_id = o.id) AS reservations,"
            " (SELECT count(*) FROM outbox_event e WHERE e.aggregate_id = o.id) AS events"
            " FROM orders o WHERE o.id = ANY(%s::uuid[])",
            [must],
        )
        assert all(r["status"] == "CONFIRMADO" and r["lines"] == r["reservations"] == 1 and r["events"] == 2 for r in rows)
        assert audited and audited <= {r["id"] for r in second.query("SELECT id FROM audit_log")}, "an audit row was lost"
        books = run_here(
            ["-m", "flask", "--app", "app", "check"],
            {**env, "DATABASE_URL": second.database_url, "REDIS_URL": second.redis_url, "NEXO_ENV": "demo"},
            60,
        )
        assert books.returncode == 0 and "add up" in books.stdout, books.stdout + books.stderr

        # Every event of the restored orders delivered, each once at its destination (same Idempotency-Key).
        def delivered():
            rows = second.query("SELECT status FROM outbox_event")
            return rows and all(r["status"] == "ENTREGADO" for r in rows)

        wait_for(delivered, 60, "every event ENTREGADO after the restore")
        for destination, url in (("fiscal", second.fiscal), ("warehouse", second.warehouse)):
            ours = {str(r["id"]) for r in second.query("SELECT id FROM outbox_event WHERE destination = %s", [destination])}
            keys = [e["key"] for e in requests.get(url + "/__sandbox/effects", timeout=10).json()]
            assert len(keys) == len(set(keys)) and ours <= set(keys), destination
        with capsys.disabled():  # the drill's figures, in every make test output
            print(
                f"\n[drill] {len(placed)} orders placed ({len(must)} older than the lag), "
                f"{len(present & {o for o, _ in placed})} after the restore; restore took {restore_s:.1f} s",
                flush=True,
            )
        third = a_restore_delivers_nothing_twice(second, env, backups)
    finally:
        for stack in (first, second, third):
            if stack is not None:
                stack.close()
        shutil.rmtree(first.data_dir, ignore_errors=True)
        shutil.rmtree(other_disk, ignore_errors=True)


def effects(stack: RunningStack) -> dict[str, dict]:
    """Every effect the two fakes applied, by Idempotency-Key."""
    found = {}
    for url in (stack.fiscal, stack.warehouse):
        for effect in requests.get(url + "/__sandbox/effects", timeout=10).json():
            assert effect["key"] not in found, "two effects for one key"
            found[effect["key"]] = effect
    return found


def a_restore_delivers_nothing_twice(stack: RunningStack, env: dict, backups: dict) -> RunningStack:
    """Orders committed before AT whose events were delivered after AT: restored PENDIENTE, sent again with
    the same Idempotency-Key, answered with the effect already applied (no second one)."""
    for url in (stack.fiscal, stack.warehouse):  # the destinations refuse for a moment: the events wait
        requests.post(url + "/__sandbox/mode", json={"mode": "error_5xx"}, timeout=5)
    seller = http_login(stack.url, "vendedor1")
    late = [place_order(stack, seller)[0] for _ in range(2)]
    time.sleep(0.5)
    at = time.time()
    time.sleep(0.5)
    for url in (stack.fiscal, stack.warehouse):
        requests.post(url + "/__sandbox/mode", json={"mode": "ok"}, timeout=5)
    query = "SELECT id::text, status FROM outbox_event WHERE aggregate_id = ANY(%s::uuid[])"
    wait_for(lambda: all(r["status"] == "ENTREGADO" for r in stack.query(query, [late])), 30, "the late events delivered")
    keys = {r["id"] for r in stack.query(query, [late])}
    before = {k: v for k, v in effects(stack).items() if k in keys}
    assert len(before) == len(keys) == 4
    time.sleep(LAG_S + 2)  # archived
    stack.close()  # make run stopped (SIGTERM), as a person does before a restore

    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at % 1 * 1e6):06d}+00:00"
    restored = run_here(["scripts/stack.py", "restore", "--at", when], env, 180)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    restored_at = time.time()
    third = RunningStack({**backups, "NEXO_DATA_DIR": str(stack.data_dir)})
    third.data_dir = stack.data_dir
    third.wait_ready()
    assert {str(r["id"]) for r in third.query("SELECT id FROM orders WHERE id = ANY(%s::uuid[])", [late])} == set(late)
    wait_for(lambda: all(r["status"] == "ENTREGADO" for r in third.query(query, [late])), 30, "sent again after the restore")
    delivered = third.query(
        "SELECT e.id::text, count(*) AS n, min(extract(epoch FROM a.started_at)) AS at FROM delivery_attempt a"
        " JOIN outbox_event e ON e.id = a.event_id"
        " WHERE e.aggregate_id = ANY(%s::uuid[]) AND a.outcome = 'ENTREGADO' GROUP BY e.id",
        [late],
    )
    # Each came back PENDIENTE (no delivery before AT) and went out again once, after the restore.
    assert len(delivered) == 4 and all(r["n"] == 1 and float(r["at"]) > restored_at for r in delivered), delivered
    after = {k: v for k, v in effects(third).items() if k in keys}

    def effect(e: dict) -> dict:
        return {k: v for k, v in e.items() if k != "deliveries"}

    # Asked twice (the fakes count it), applied once: the same effect, the same moment.
    assert {k: effect(v) for k, v in after.items()} == {k: effect(v) for k, v in before.items()}
    assert all(v["deliveries"] == 2 for v in after.values()), after
    return third
