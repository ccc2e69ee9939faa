"""What each layer of an order form's POST costs the web process, in ONE process (round 3, web CPU).

    .venv/bin/python scripts/stack.py exec --throwaway -- .venv/bin/python bench/web_cpu_layers.py

`make bench` measures gunicorn's CPU per HTTP order (phase 3); a profiler inflates call-heavy code and a
shared machine moves between runs by more than one layer costs. This one takes each layer out in turn, in
one process, alternating blocks of BLOCK orders: a salesperson logged in through the form POSTs 2-line
orders through Flask's test client (its own request building is counted in every variant alike), and the
process CPU time (time.process_time: this process's Python and psycopg, not Postgres's) per POST is read
per block. A variant's difference from `as_is` is what that layer costs a POST. Prints each block and
the medians.

The variants switch off, for the block only, one thing the product needs: the confirmation flash (the
session cookie is then not rewritten), CSRF, the login limits' per-request check, Flask-Login's
session protection, the order's log line. And `no_order`: the same POST answered before create_order
(what the HTTP tier costs around an order).
"""

from __future__ import annotations

import contextlib
import logging
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nexo import create_app  # noqa: E402
from nexo.extensions import get_db, login_manager  # noqa: E402
from nexo.orders import commands  # noqa: E402
from nexo.orders import views as order_views  # noqa: E402
from tests.helpers import csrf_token  # noqa: E402

BLOCK = int(os.environ.get("LAYERS_BLOCK", "300"))
ROUNDS = int(os.environ.get("LAYERS_ROUNDS", "6"))
FORM_ROWS = 5  # as the bench and a browser send it: the unused rows empty


def main() -> int:
    env = {**os.environ, "NEXO_ENV": "test"}
    subprocess.run([sys.executable, "-m", "flask", "--app", "app", "demo", "load", "--if-empty"], env=env, check=True)
    app = create_app(test_config={"TESTING": True, "WTF_CSRF_ENABLED": True})
    client = app.test_client()
    token = csrf_token(client.get("/login").get_data(as_text=True))
    client.post("/login", data={"username": "vendedor1", "password": "nexo-demo", "csrf_token": token})
    token = csrf_token(client.get("/orders/new").get_data(as_text=True))
    cookie = client.get_cookie("session")
    assert cookie is not None, "the login set no session cookie"
    with app.app_context(), get_db().reading_one() as conn:
        # Room for every order of the run: no rejection for stock or credit changes the path measured.
        client_id = conn.execute("SELECT id FROM client WHERE name = 'Corralón del Sur'").fetchone()["id"]
        conn.execute("UPDATE stock_level SET on_hand = 100000000")
        conn.execute("UPDATE client SET credit_limit_cents = 10000000000000 WHERE id = %s", [client_id])

    def post() -> None:
        # Each POST carries the session as the GET left it, as the bench's load generator does: the flash
        # of the previous order is not carried along (a browser follows the redirect, which reads it).
        client.set_cookie("session", cookie.value)
        form = {"csrf_token": token, "request_id": str(uuid.uuid4()), "client_id": str(client_id), "deposit_id": "CEN"}
        for i, (sku, quantity) in enumerate([("TOR-010", "1"), ("COR-200", "1")] + [("", "")] * (FORM_ROWS - 2)):
            form[f"lines-{i}-sku"], form[f"lines-{i}-quantity"] = sku, quantity
        status = client.post("/orders/new", data=form).status_code
        assert status == 303, f"POST /orders/new answered {status}"

    variants = _variants(app)
    for _ in range(200):
        post()
    results: dict[str, list[float]] = {name: [] for name in variants}
    for block in range(ROUNDS):
        for name in list(variants) if block % 2 == 0 else list(variants)[::-1]:
            with variants[name]():
                for _ in range(30):
                    post()
                started = time.process_time()
                for _ in range(BLOCK):
                    post()
                results[name].append((time.process_time() - started) / BLOCK * 1e3)
        print(f"round {block + 1}: " + ", ".join(f"{n} {v[-1]:.2f}" for n, v in results.items()), flush=True)
    base = statistics.median(results["as_is"])
    print(f"CPU ms per POST /orders/new in the web process, median of {ROUNDS} blocks of {BLOCK}:")
    for name, values in results.items():
        median = statistics.median(values)
        print(f"    {name:<22} {median:6.3f}   {median - base:+.3f} against as_is")
    return 0


def _variants(app) -> dict[str, Callable[[], contextlib.AbstractContextManager]]:
    @contextlib.contextmanager
    def as_is() -> Iterator[None]:
        yield

    @contextlib.contextmanager
    def no_flash() -> Iterator[None]:
        with _swapped(order_views, "flash", lambda *args, **kwargs: None):
            yield

    @contextlib.contextmanager
    def no_csrf() -> Iterator[None]:
        with _swapped(app.config, "WTF_CSRF_ENABLED", False, item=True):
            yield

    @contextlib.contextmanager
    def no_login_limits() -> Iterator[None]:
        with _swapped(app.extensions["nexo.limiter"], "enabled", False):
            yield

    @contextlib.contextmanager
    def no_session_protection() -> Iterator[None]:
        with _swapped(login_manager, "session_protection", None):
            yield

    @contextlib.contextmanager
    def no_log_line() -> Iterator[None]:
        logger = logging.getLogger("nexo")
        level = logger.level
        logger.setLevel(logging.WARNING)
        try:
            yield
        finally:
            logger.setLevel(level)

    @contextlib.contextmanager
    def no_order() -> Iterator[None]:
        # The view as it is up to create_order; the redirect a confirmed order gets, without the order.
        def answered(*args, **kwargs):
            return commands.Confirmed(order_id=uuid.uuid4())

        with _swapped(order_views.service, "create_order", answered):
            yield

    return {
        "as_is": as_is,
        "no_flash": no_flash,
        "no_csrf": no_csrf,
        "no_login_limits": no_login_limits,
        "no_session_protection": no_session_protection,
        "no_log_line": no_log_line,
        "no_order": no_order,
    }


@contextlib.contextmanager
def _swapped(owner, name: str, value, *, item: bool = False) -> Iterator[None]:
    old = owner[name] if item else getattr(owner, name)
    if item:
        owner[name] = value
    else:
        setattr(owner, name, value)
    try:
        yield
    finally:
        if item:
            owner[name] = old
        else:
            setattr(owner, name, old)


if __name__ == "__main__":
    sys.exit(main())
