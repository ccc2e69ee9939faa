"""Small helpers shared by the test modules (imported, not fixtures)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

DEMO_PASSWORD = "nexo-demo"
_CSRF = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"|name="csrf_token" value="([^"]+)"')


def csrf_token(html: str) -> str:
    """The CSRF token of the first form on a page."""
    match = _CSRF.search(html)
    assert match, "no csrf_token on the page"
    return match.group(1) or match.group(2)


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_login(base_url: str, username: str, password: str = DEMO_PASSWORD) -> requests.Session:
    """A requests session logged in through the real login form of a live server."""
    session = requests.Session()
    token = csrf_token(session.get(base_url + "/login", timeout=10).text)
    response = session.post(
        base_url + "/login",
        data={"username": username, "password": password, "csrf_token": token},
        allow_redirects=False,
        timeout=10,
    )
    assert response.status_code == 302, response.status_code
    return session


ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def running_gunicorn(env: dict | None = None, log_path: Path | None = None) -> Iterator[str]:
    """Nexo under gunicorn as `make run` starts it (scripts/gunicorn_conf.py), on a free port; yields its URL."""
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {}), "PORT": str(port)}
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115 (closed in finally)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "scripts/gunicorn_conf.py", "app:app"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        if log_path:
            log.close()
    base = f"http://127.0.0.1:{port}"
    where = f"; see {log_path}" if log_path else ""
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(base + "/health", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert proc.poll() is None, f"gunicorn exited{where}"
            assert time.monotonic() < deadline, f"gunicorn did not answer /health within 30 s{where}"
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
