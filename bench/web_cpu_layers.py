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
from unittest import mock

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
    """Each variant's context: the layer it names off for the block, back on after it."""

    def no_order(*args, **kwargs):  # the view as it is up to create_order, and the redirect it answers
        return commands.Confirmed(order_id=uuid.uuid4())

    return {
        "as_is": contextlib.nullcontext,
        "no_flash": lambda: mock.patch.object(order_views, "flash", lambda *args, **kwargs: None),
        "no_csrf": lambda: mock.patch.dict(app.config, {"WTF_CSRF_ENABLED": False}),
        "no_login_limits": lambda: mock.patch.object(app.extensions["nexo.limiter"], "enabled", False),
        "no_session_protection": lambda: mock.patch.object(login_manager, "session_protection", None),
        "no_log_line": _no_log_line,
        "no_order": lambda: mock.patch.object(order_views.service, "create_order", no_order),
    }


@contextlib.contextmanager
def _no_log_line() -> Iterator[None]:
    # setLevel, not a patched attribute: it also clears the loggers' cached isEnabledFor answers.
    logger = logging.getLogger("nexo")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


if __name__ == "__main__":
    sys.exit(main())
