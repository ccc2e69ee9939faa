"""A PostgreSQL restart under a stream of orders costs a clean 503, never a 500 (guarantee 17, docs/guarantees.md).

Real processes: a private Postgres (never the machine's shared one), Nexo under gunicorn as `make run`
starts it, salespeople posting real order forms from threads, and `pg_ctl restart -m fast` mid-stream.
"""

from __future__ import annotations

import collections
import os
import threading
import time

import pytest
import requests

from tests.e2e.order_forms import form_data, order_id_from, resubmitted_form
from tests.helpers import http_login, running_gunicorn
from tests.private_postgres import PrivatePostgres

LINES = [("TOR-010", 1), ("COR-200", 1)]
# A steady stream rather than a flood: between orders the pooled connections sit idle, as they do
# in real life, and a restart breaks them where they sit (the case psycopg_pool's check is for).
THINK_S = 0.05
RESTARTS = 3  # back to back: more pooled connections are caught broken (each takes about 0.5 s)
RECOVERY_S = 10  # after the restart: /health 200 and a new order within this many seconds


@pytest.fixture
def private_postgres():
    server = PrivatePostgres()
    # Stock for a few thousand orders: every POST of the stream is meant to succeed or get a 503.
    server.execute("UPDATE stock_level SET on_hand = 1000000")
    yield server
    server.stop()


class OrderStream:
    """Threads that keep posting orders (GET the form, POST it), and readers of the pages with navigation
    badges (Laura's queue, Marta's dead letters); every answer is kept with its time."""

    def __init__(self, base: str, users: list[str], readers: dict[str, str]):
        self.base = base
        self.answers: list[tuple[float, str, int, str]] = []  # (time, step, status, body or order id)
        self.errors: collections.Counter = collections.Counter()
        self.unanswered: list[tuple[requests.Session, dict, str]] = []  # (session, form sent, its 503 page)
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._post_orders, args=(http_login(base, user),), daemon=True) for user in users
        ]
        self._threads += [
            threading.Thread(target=self._read, args=(http_login(base, user), page), daemon=True)
            for user, page in readers.items()
        ]

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _post_orders(self, session: requests.Session) -> None:
        while not self._stop.is_set():
            try:
                page = session.get(self.base + "/orders/new", timeout=15)
                self._keep("get", page)
                if page.status_code != 200:
                    time.sleep(0.05)
                    continue
                data = form_data(page.text, "Corralón del Sur", LINES)
                answer = session.post(self.base + "/orders/new", data=data, allow_redirects=False, timeout=15)
                self._keep("post", answer)
                if answer.status_code == 503:
                    self.unanswered.append((session, data, answer.text))
                time.sleep(THINK_S)
            except requests.RequestException as exc:
                self.errors[type(exc).__name__] += 1

    def _read(self, session: requests.Session, page: str) -> None:
        while not self._stop.is_set():
            try:
                self._keep("read", session.get(self.base + page, timeout=15))
            except requests.RequestException as exc:
                self.errors[type(exc).__name__] += 1
            time.sleep(THINK_S)

    def _keep(self, step: str, response: requests.Response) -> None:
        detail = order_id_from(response.headers["Location"]) if response.status_code == 303 else response.text
        self.answers.append((time.monotonic(), step, response.status_code, detail))

    def statuses(self) -> collections.Counter:
        return collections.Counter((step, status) for _, step, status, _ in self.answers)

    def created_orders(self) -> list[str]:
        return [detail for _, step, status, detail in self.answers if step == "post" and status == 303]


def _wait_for(predicate, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return time.monotonic()
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout} s")


@pytest.mark.slow
def test_postgres_restart_under_order_posts_gives_503_pages_never_500_and_recovers(private_postgres, tmp_path):
    env = {
        "DATABASE_URL": private_postgres.url,
        "REDIS_URL": os.environ["REDIS_URL"],
        "WEB_WORKERS": "2",
        "WEB_THREADS": "4",
        "DB_POOL_TIMEOUT_S": "2",
    }
    log_path = tmp_path / "gunicorn.log"
    with running_gunicorn(env, log_path=log_path) as base:
        readers = {"laura": "/credit/queue", "marta": "/admin/dead-letters"}
        with OrderStream(base, ["vendedor1", "vendedor2"] * 3, readers) as stream:
            _wait_for(lambda: len(stream.created_orders()) >= 20, timeout=30)
            outage_started = time.monotonic()
            for _ in range(RESTARTS):
                private_postgres.restart()
                time.sleep(0.5)
            outage_ended = time.monotonic()
            health_back = _wait_for(lambda: requests.get(base + "/health", timeout=5).status_code == 200, timeout=RECOVERY_S)
            orders_before = len(stream.created_orders())
            _wait_for(lambda: len(stream.created_orders()) > orders_before, timeout=RECOVERY_S)
            time.sleep(1)

        statuses = stream.statuses()
        log = log_path.read_text(errors="replace")
        assert not [k for k in statuses if k[1] >= 500 and k[1] != 503], (statuses, log[-4000:])
        assert set(statuses) <= {("get", 200), ("read", 200), ("post", 303), ("get", 503), ("read", 503), ("post", 503)}, statuses
        assert not stream.errors, stream.errors  # every request got an answer
        assert "Internal Server Error" not in log and '"status": 500' not in log
        # 503s only around the outage: none before it, none once Nexo had recovered.
        for at, step, status, body in stream.answers:
            if status == 503:
                assert outage_started - 0.5 <= at <= max(health_back, outage_ended) + 3, (step, at - outage_ended)
                assert "Servicio no disponible" in body and "No se guardó nada" not in body
                if step == "post":
                    assert "confirmá el mismo formulario otra vez" in body
        assert health_back - outage_ended < RECOVERY_S

        # A fresh form after the outage makes an order, without restarting Nexo.
        session = http_login(base, "vendedor1")
        page = session.get(base + "/orders/new", timeout=10)
        answer = session.post(
            base + "/orders/new", data=form_data(page.text, "Corralón del Sur", LINES), allow_redirects=False, timeout=10
        )
        assert answer.status_code == 303
        created = stream.created_orders() + [order_id_from(answer.headers["Location"])]
        # What the 503 page says is true: confirming the same form again (same requestId) gives the
        # order, the one that was kept if its commit went through before the connection was lost.
        for poster, sent, page in stream.unanswered:
            resubmit = resubmitted_form(page)
            assert resubmit == sent  # the page carries the very same form
            again = poster.post(base + "/orders/new", data=resubmit, allow_redirects=False, timeout=10)
            assert again.status_code == 303, again.status_code
            created.append(order_id_from(again.headers["Location"]))

    assert len(created) == len(set(created))  # one order per form, none twice
    _assert_every_order_is_whole(private_postgres, created)


def _assert_every_order_is_whole(server: PrivatePostgres, order_ids: list[str]) -> None:
    """Each answered order has both lines, both reservations and both outbox events: nothing half kept."""
    rows = server.execute(
        """
        SELECT o.id::text,
               (SELECT count(*) FROM order_line l WHERE l.order_id = o.id),
               (SELECT count(*) FROM stock_reservation r WHERE r.order_id = o.id AND r.kind = 'FIRME'),
               (SELECT count(*) FROM outbox_event e WHERE e.aggregate_id = o.id),
               (SELECT count(*) FROM idempotency_keys k WHERE k.order_id = o.id)
          FROM orders o WHERE o.id = ANY(%s::uuid[])
        """,
        [order_ids],
    )
    assert len(rows) == len(order_ids)
    assert all(row[1:] == (2, 2, 2, 1) for row in rows), [r for r in rows if r[1:] != (2, 2, 2, 1)]
    # Nothing else was kept: no order that nobody was ever answered about, whole or half-made.
    assert server.execute("SELECT count(*) FROM orders")[0][0] == len(order_ids)
    reserved = server.execute("SELECT sum(reserved) FROM stock_level")[0][0]
    placed = server.execute("SELECT coalesce(sum(quantity), 0) FROM order_line")[0][0]
    assert reserved == placed
