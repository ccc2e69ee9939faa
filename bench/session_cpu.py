"""Web CPU per request of a logged-in page, two source trees alternated (ADR-018's measurement).

    .venv/bin/python scripts/stack.py exec --throwaway -- .venv/bin/python bench/session_cpu.py BEFORE_DIR AFTER_DIR

BEFORE_DIR is an export of the commit to compare with (`git archive main | tar -x -C /tmp/before`), AFTER_DIR
this tree. For each round, each tree in turn: one gunicorn (1 worker, 1 thread, as scripts/gunicorn_conf.py
otherwise) from that tree against the same database and Redis, marta logged in through the form, 200
warm-up requests, then REQUESTS keep-alive GETs of `/` (a redirect: the user load, the session check
and the headers are most of its work); the gunicorn tree's CPU seconds (utime + stime, /proc) over those
requests, divided by their number. Rounds alternate the order so that a machine getting busier
favours neither side. Prints per round and the medians.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.cpu import tree_seconds  # noqa: E402
from tests.helpers import csrf_token, free_port  # noqa: E402

REQUESTS = int(os.environ.get("SESSION_CPU_REQUESTS", "3000"))
ROUNDS = int(os.environ.get("SESSION_CPU_ROUNDS", "4"))


def one_run(tree: Path) -> float:
    """CPU microseconds per request of gunicorn running `tree`."""
    port = free_port()
    env = {**os.environ, "PORT": str(port), "WEB_WORKERS": "1", "WEB_THREADS": "1", "PYTHONPATH": str(tree)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "scripts/gunicorn_conf.py", "--access-logfile", "/dev/null", "app:app"],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if requests.get(base + "/health", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.1)
        http = requests.Session()
        token = csrf_token(http.get(base + "/login", timeout=10).text)
        login = {"username": "marta", "password": "nexo-demo", "csrf_token": token}
        assert http.post(base + "/login", data=login, allow_redirects=False, timeout=10).status_code == 302
        for _ in range(200):
            assert http.get(base + "/", allow_redirects=False, timeout=10).status_code == 302
        started = tree_seconds(proc.pid)
        for _ in range(REQUESTS):
            http.get(base + "/", allow_redirects=False, timeout=10)
        return (tree_seconds(proc.pid) - started) / REQUESTS * 1e6
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def main() -> int:
    before, after = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    env = {**os.environ, "NEXO_ENV": "test"}
    subprocess.run([sys.executable, "-m", "flask", "--app", "app", "demo", "load", "--if-empty"], cwd=after, env=env, check=True)
    results: dict[str, list[float]] = {"before": [], "after": []}
    for round_no in range(ROUNDS):
        order = [("before", before), ("after", after)]
        for name, tree in order if round_no % 2 == 0 else order[::-1]:
            results[name].append(one_run(tree))
        print(f"round {round_no + 1}: before {results['before'][-1]:.0f} µs, after {results['after'][-1]:.0f} µs", flush=True)
    b, a = statistics.median(results["before"]), statistics.median(results["after"])
    print(f"median web CPU per request: before {b:.0f} µs, after {a:.0f} µs, difference {a - b:+.0f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
