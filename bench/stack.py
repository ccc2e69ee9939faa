"""The processes under measurement, started from the Procfile exactly as `make run` starts them.

`make run` runs the Procfile under supervisord; here each line is started on its own (same command, same
environment shape: NEXO_ENV=demo, a SECRET_KEY, the fakes' URLs, NEXO_DATA_DIR, a private PROMETHEUS_MULTIPROC_DIR),
so that the bench can start N workers, stop them between runs and profile one process at a time.
Every process gets its own session (process group) and a log file under the bench's work directory.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from string import Template

import redis
import requests
from rq import Worker

from nexo.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def procfile(path: Path = ROOT / "Procfile") -> dict[str, str]:
    """The Procfile's commands by process name."""
    commands = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, command = line.split(":", 1)
            commands[name.strip()] = command.strip()
    return commands


class Stack:
    """Starts and stops the Procfile's processes; stops whatever is left on close()."""

    def __init__(self, base_env: dict):
        self.workdir = Path(tempfile.mkdtemp(prefix="nexo-bench-"))
        self.commands = procfile()
        self.env = {
            **base_env,
            "NEXO_ENV": "demo",
            "PYTHONUNBUFFERED": "1",
            "SECRET_KEY": base_env.get("SECRET_KEY") or secrets.token_urlsafe(32),
        }
        self.env.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="nexo-bench-prometheus-"))
        self.env["NEXO_SANDBOX_DIR"] = str(self.workdir)  # the fakes' SQLite files (Procfile --db)
        self.procs: list[subprocess.Popen] = []
        self.web_url: str | None = None
        self.web: subprocess.Popen | None = None
        self.fakes: list[subprocess.Popen] = []

    def start(self, name: str, **overrides) -> subprocess.Popen:
        """Start one Procfile process with these environment overrides; its output goes to a log file."""
        env = {**self.env, **{k: str(v) for k, v in overrides.items()}}
        argv = self.argv(name, env)
        log_path = self.workdir / f"{name}-{len(self.procs)}.log"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        proc.log_path = log_path
        self.procs.append(proc)
        return proc

    def argv(self, name: str, env: dict) -> list[str]:
        """The Procfile command of `name` with its $VARIABLES from env (KeyError names one env lacks)."""
        argv = shlex.split(Template(self.commands[name]).substitute(env))
        if argv[0] == "python":
            argv[0] = sys.executable  # the venv's interpreter, as make run's supervisord config names it
        return argv

    def start_fakes(self) -> None:
        """Both sandboxed fakes on free ports; FISCAL_URL / WAREHOUSE_URL point at them."""
        for name in ("fiscal", "warehouse"):
            port = free_port()
            self.env[f"{name.upper()}_PORT"] = str(port)
            self.env[f"{name.upper()}_URL"] = f"http://127.0.0.1:{port}"
            proc = self.start(name)
            self.fakes.append(proc)
            _wait_http(self.env[f"{name.upper()}_URL"] + "/__sandbox/health", proc)

    def start_web(self, **overrides) -> str:
        """gunicorn with scripts/gunicorn_conf.py (WEB_WORKERS/WEB_THREADS as given, plus these environment
        overrides); returns its URL."""
        port = free_port()
        self.env["PORT"] = str(port)
        proc = self.web = self.start("web", **overrides)
        self.web_url = f"http://127.0.0.1:{port}"
        _wait_http(self.web_url + "/health", proc, timeout_s=60)
        return self.web_url

    def start_workers(self, count: int, **overrides) -> list[subprocess.Popen]:
        """`count` RQ relay workers; returns once all of them are registered with Redis and listening."""
        connection = redis.Redis.from_url(self.env["REDIS_URL"])
        before = {w.name for w in Worker.all(connection=connection)}
        procs = [self.start("worker", **overrides) for _ in range(count)]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            new = [
                w
                for w in Worker.all(connection=connection)
                if w.name not in before and Settings.from_env(self.env).relay_queue in w.queue_names()
            ]
            if len(new) >= count:
                return procs
            for proc in procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a relay worker exited with {proc.returncode}; see {proc.log_path}")
            time.sleep(0.05)
        raise RuntimeError(f"relay workers did not register with Redis within 60 s; see {self.workdir}")

    def stop(self, proc: subprocess.Popen, timeout_s: float = 15) -> None:
        """SIGTERM the process group (warm shutdown), then SIGKILL if it does not stop."""
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        if proc in self.procs:
            self.procs.remove(proc)

    def close(self) -> None:
        """Stop every process still running, newest first."""
        for proc in reversed(list(self.procs)):
            self.stop(proc)


def _wait_http(url: str, proc: subprocess.Popen, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}; see {proc.log_path}")
        with contextlib.suppress(requests.RequestException):
            if requests.get(url, timeout=1).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer 200 within {timeout_s} s; see {proc.log_path}")
