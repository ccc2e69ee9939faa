"""A whole `scripts/stack.py run` (what `make run` starts) in a temporary NEXO_DATA_DIR, for fault tests.

It gets its own embedded Postgres and Redis (DATABASE_URL / REDIS_URL are removed from its
environment), fakes on free ports, and short relay cadences. Programs are found through supervisord's
XML-RPC socket, never by a broad process name: other Nexo stacks may run on the same machine.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import xmlrpc.client
from pathlib import Path

import psycopg
import requests
from psycopg.rows import dict_row
from supervisor.xmlrpc import SupervisorTransport

from tests.helpers import ROOT, free_port

RELAY_KNOBS = {
    "RELAY_DELIVERY_TIMEOUT_S": "3",
    "RELAY_LEASE_S": "10",
    "RELAY_SWEEP_INTERVAL_S": "1",
    "RELAY_MAX_ATTEMPTS": "6",
    "RELAY_BACKOFF_BASE_S": "0.5",
    "RELAY_BACKOFF_CAP_S": "2",
}
_DROP = (
    "DATABASE_URL",
    "REDIS_URL",
    "FISCAL_URL",
    "WAREHOUSE_URL",
    "PROMETHEUS_MULTIPROC_DIR",
    "SECRET_KEY",
    "PYTEST_CURRENT_TEST",
)


def wait_for(condition, timeout_s: float, what: str, interval_s: float = 0.2):
    """Poll condition() until it returns something truthy; fail after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        time.sleep(interval_s)


class RunningStack:
    """One `scripts/stack.py run` child process and what it printed."""

    def __init__(self, extra_env: dict | None = None):
        self.data_dir = Path(tempfile.mkdtemp(prefix="nexo-run-"))
        self.output = self.data_dir / "stack.out"
        env = {k: v for k, v in os.environ.items() if k not in _DROP}
        env.update(
            {
                "NEXO_DATA_DIR": str(self.data_dir),
                "PORT": str(free_port()),
                "NEXO_ENV": "demo",
                "RELAY_WORKERS": "2",
                "WEB_WORKERS": "2",
                "WEB_THREADS": "4",
                **RELAY_KNOBS,
                **(extra_env or {}),
            }
        )
        with open(self.output, "wb") as out:
            # Its own session, like a terminal's foreground job: Ctrl-C is a SIGINT to the whole group.
            self.proc = subprocess.Popen(
                [sys.executable, "scripts/stack.py", "run"],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.redis_url = None

    def wait_ready(self) -> None:
        """Wait for the printed URLs, /health 200 and every program RUNNING."""
        printed = wait_for(self._printed, 120, "make run printed its URLs")
        self.url, self.fiscal, self.warehouse, self.database_url, self.redis_url = printed
        # make run prints its servers' URLs without their passwords; they are kept in NEXO_DATA_DIR (0600).
        self.database_url = self.database_url.replace(":***@", f":{self.secret('postgres_password')}@")
        self.redis_url = self.redis_url.replace(":***@", f":{self.secret('redis_password')}@")
        wait_for(lambda: self.health() == 200, 60, "/health 200 after start")
        wait_for(self.all_running, 60, "every program RUNNING")

    def _printed(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"make run exited with {self.proc.returncode}:\n{self.text()[-3000:]}")
        text = self.text()
        found = [
            re.search(p, text)
            for p in (
                r"Nexo: (http://\S+)",
                r"fiscal: (http://\S+)",
                r"warehouse: (http://\S+)",
                r"embedded Postgres on (\S+)",
                r"embedded Redis on (\S+)",
            )
        ]
        return [m.group(1) for m in found] if all(found) else None

    def secret(self, name: str) -> str:
        """A password make run keeps in its data directory."""
        return (self.data_dir / name).read_text().strip()

    def text(self) -> str:
        """Everything make run printed so far."""
        return self.output.read_text(errors="replace")

    # --- programs -------------------------------------------------------------------------------
    def supervisor(self, method: str, *args):
        """Call one of supervisord's XML-RPC methods (supervisor.<method>) over its socket, closed afterwards."""
        # The socket lives in a short temporary directory (scripts/stack.py socket_dir); the config names it.
        conf = (self.data_dir / "supervisor" / "supervisord.conf").read_text()
        sock = re.search(r"^serverurl=unix://(.+)$", conf, re.M).group(1)
        with xmlrpc.client.ServerProxy("http://127.0.0.1", transport=SupervisorTransport(None, None, f"unix://{sock}")) as proxy:
            return getattr(proxy.supervisor, method)(*args)  # leaving the block closes the socket

    def info(self, program: str) -> dict:
        """supervisord's view of one program (state name, pid)."""
        group = "sandbox" if program in ("fiscal", "warehouse") else "nexo"
        return self.supervisor("getProcessInfo", f"{group}:{program}")

    def all_running(self) -> bool:
        return all(p["statename"] == "RUNNING" for p in self.supervisor("getAllProcessInfo"))

    def pid(self, program: str) -> int:
        return self.info(program)["pid"]

    def kill(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    def wait_restarted(self, program: str, old_pid: int, timeout_s: float = 20) -> int:
        """The program's new pid, once supervisord has started it again and it stayed up."""

        def restarted():
            info = self.info(program)
            return info["pid"] if info["statename"] == "RUNNING" and info["pid"] not in (0, old_pid) else None

        return wait_for(restarted, timeout_s, f"{program} restarted (was pid {old_pid})")

    # --- HTTP and data --------------------------------------------------------------------------
    def health(self) -> int:
        try:
            return requests.get(self.url + "/health", timeout=3).status_code
        except requests.RequestException:
            return 0

    def query(self, sql: str, params=None) -> list[dict]:
        with psycopg.connect(self.database_url, row_factory=dict_row, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()

    # --- stopping -------------------------------------------------------------------------------
    def leftovers(self) -> list[str]:
        """Command lines of processes this stack started that are still alive."""
        marker = f"NEXO_DATA_DIR={self.data_dir}".encode()
        redis_port = self.redis_url.rsplit(":", 1)[1].split("/")[0] if self.redis_url else "-"
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                environ = (entry / "environ").read_bytes()
                if (
                    marker in environ.split(b"\0")
                    or str(self.data_dir) in cmdline
                    or f"redis-server 127.0.0.1:{redis_port}" in cmdline
                ):
                    found.append(f"{entry.name} {cmdline}")
        return found

    def close(self) -> None:
        """Stop the stack if a test did not; kill whatever is left."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=30)
        for line in self.leftovers():
            with contextlib.suppress(OSError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
