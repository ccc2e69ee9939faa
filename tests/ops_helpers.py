"""Helpers of the operations, metrics, logging and security tests."""

from __future__ import annotations

import os
import re
import uuid
from contextlib import contextmanager
from pathlib import Path

import requests

from tests.helpers import DEMO_PASSWORD, csrf_token, running_gunicorn

ROOT = Path(__file__).resolve().parent.parent
_OPS_VALUE = re.compile(r'data-metric="([^"]+)"(?: data-(?:destination|window)="([^"]+)")? data-value="([^"]*)"')
_METRIC_LINE = re.compile(r"^(nexo_[a-z0-9_]+)(?:\{([^}]*)\})? (\S+)$")


def ops_values(html: str) -> dict[tuple[str, str | None], float | None]:
    """Every number the /ops page shows, keyed by (data-metric, destination or window)."""
    return {(name, qualifier or None): (float(value) if value else None) for name, qualifier, value in _OPS_VALUE.findall(html)}


def prometheus_values(text: str) -> dict[tuple[str, str], float]:
    """Every sample of a /metrics body, keyed by (name, 'label="value",...' as written)."""
    values = {}
    for line in text.splitlines():
        match = _METRIC_LINE.match(line)
        if match:
            values[(match.group(1), match.group(2) or "")] = float(match.group(3))
    return values


def login_client(app, username: str, password: str = DEMO_PASSWORD):
    """A new Flask test client of app, logged in through the login form."""
    client = app.test_client()
    token = csrf_token(client.get("/login").get_data(as_text=True))
    response = client.post("/login", data={"username": username, "password": password, "csrf_token": token})
    assert response.status_code == 302, response.status_code
    return client


def make_order(db, *, status: str = "CONFIRMADO", age: str = "0 minutes", client: str = "Corralón del Sur") -> uuid.UUID:
    """An order row written with plain SQL (the signals read tables, not use cases)."""
    order_id = uuid.uuid4()
    with db.transaction() as tx:
        tx.execute(
            """
            INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents, created_at)
            SELECT %s, c.id, 'CEN', u.id, %s, 100000, now() - %s::interval
              FROM client c, app_user u WHERE c.name = %s AND u.username = 'vendedor1'""",
            [order_id, status, age, client],
        )
        tx.commit()
    return order_id


def make_event(
    db,
    order_id,
    *,
    destination: str = "fiscal",
    status: str = "PENDIENTE",
    age: str = "0 minutes",
    last_error: str | None = None,
    dead_letter: bool = False,
) -> uuid.UUID:
    """An outbox event written with plain SQL, optionally FALLIDO with its pending dead letter."""
    event_type = {"fiscal": "billing.intent_recorded", "warehouse": "order.handoff_requested"}[destination]
    event_id = uuid.uuid4()
    with db.transaction() as tx:
        tx.execute(
            """
            INSERT INTO outbox_event (id, aggregate_id, event_type, destination, payload, status, attempts,
                                      last_error, created_at)
            VALUES (%s, %s, %s, %s, '{}'::jsonb, %s, 1, %s, now() - %s::interval)""",
            [event_id, order_id, event_type, destination, status, last_error, age],
        )
        if dead_letter:
            tx.execute(
                """
                INSERT INTO dead_letter (event_id, destination, attempts, last_error, error_signature,
                                         first_failed_at, last_failed_at)
                VALUES (%s, %s, 1, %s, %s, now(), now())""",
                [event_id, destination, last_error, f"{destination}:500"],
            )
        tx.commit()
    return event_id


def gunicorn_env(**overrides) -> dict:
    """The test environment for a gunicorn process of Nexo, with overrides."""
    return {
        **os.environ,
        "WEB_WORKERS": "1",
        "WEB_THREADS": "4",
        "PYTHONUNBUFFERED": "1",
        **{k: str(v) for k, v in overrides.items()},
    }


@contextmanager
def gunicorn(log_path: Path, **env_overrides):
    """Nexo under gunicorn (scripts/gunicorn_conf.py) on a free port, its output in log_path; yields the base URL."""
    with running_gunicorn(gunicorn_env(**env_overrides), log_path) as base:
        yield base


def post_login(base: str, username: str, password: str, session: requests.Session | None = None) -> requests.Response:
    """POST the real login form of a live server (fresh session unless one is given)."""
    session = session or requests.Session()
    token = csrf_token(session.get(base + "/login", timeout=10).text)
    return session.post(
        base + "/login", data={"username": username, "password": password, "csrf_token": token}, allow_redirects=False, timeout=10
    )
