"""The user load of every request, before and after server-side sessions, in ONE process (ADR-018).

    .venv/bin/python scripts/stack.py exec --throwaway -- .venv/bin/python bench/session_cpu_inprocess.py

bench/session_cpu.py compares two trees under gunicorn; on a shared machine its rounds move by more
than the budget. This one removes the machine from the comparison: one app, marta logged in through
the form, GET `/` through Flask's test client, the user loader switched between this tree's (the
session row validated and touched in one statement) and the one before it (the user by id, the same
autocommit read), alternating blocks of REQUESTS, process CPU time (time.process_time: this process's
Python and psycopg, not Postgres's) per request. Prints each block and the medians.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nexo import auth, create_app  # noqa: E402
from nexo.auth import service  # noqa: E402
from nexo.extensions import get_db, login_manager  # noqa: E402
from tests.helpers import csrf_token  # noqa: E402

REQUESTS = int(os.environ.get("SESSION_CPU_REQUESTS", "2000"))
BLOCKS = int(os.environ.get("SESSION_CPU_ROUNDS", "10"))


def load_by_id(user_id: str) -> service.User | None:
    """The loader before ADR-018: the active user by the id in the signed cookie."""
    with get_db().reading_one() as conn:
        return service.load_user(conn, int(user_id))


def main() -> int:
    env = {**os.environ, "NEXO_ENV": "test"}
    subprocess.run([sys.executable, "-m", "flask", "--app", "app", "demo", "load", "--if-empty"], env=env, check=True)
    app = create_app(test_config={"TESTING": True})
    client = app.test_client()
    token = csrf_token(client.get("/login").get_data(as_text=True))
    client.post("/login", data={"username": "marta", "password": "nexo-demo", "csrf_token": token})
    loaders = {"before": load_by_id, "after": auth._load_user}
    results: dict[str, list[float]] = {"before": [], "after": []}
    for block in range(BLOCKS):
        for name in ("before", "after") if block % 2 == 0 else ("after", "before"):
            login_manager.user_loader(loaders[name])
            for _ in range(200):
                assert client.get("/").status_code == 302
            started = time.process_time()
            for _ in range(REQUESTS):
                client.get("/")
            results[name].append((time.process_time() - started) / REQUESTS * 1e6)
        print(f"block {block + 1}: before {results['before'][-1]:.0f} µs, after {results['after'][-1]:.0f} µs", flush=True)
    b, a = statistics.median(results["before"]), statistics.median(results["after"])
    print(f"median CPU per request in the web process: before {b:.0f} µs, after {a:.0f} µs, difference {a - b:+.0f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
