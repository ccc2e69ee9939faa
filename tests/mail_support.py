"""The email tests' processes: the SMTP sink (sandbox/smtp_sink.py) and the maintenance runner that sends.

Nothing is mocked: the sink is a real SMTP server in its own process (aiosmtpd), asking for a login as a
real one would, and the sender is the real `python -m jobs.retention --every …` of `make run`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import requests

from nexo.settings import Settings, mail_settings
from tests.helpers import free_port
from tests.relay_support import ROOT, wait_until

SINK_USER = "nexo"
SINK_PASSWORD = "s3cr@t-smtp"  # an @ in it: SMTP_URL carries it percent-encoded, and no log may show it

# Short cadences, so retries and expired leases happen within seconds. The mail lease is derived from
# SMTP_TIMEOUT_S (8 × 2 + 5 = 21 s, MailSettings.lease_s).
MAIL_TEST_ENV = {
    "MAIL_POLL_S": "0.2",
    "MAIL_BACKOFF_BASE_S": "0.2",
    "MAIL_BACKOFF_CAP_S": "1",
    "SMTP_TIMEOUT_S": "2",
    "MAIL_MAX_ATTEMPTS": "6",
    "MAIL_FROM": "Nexo <nexo@example.com>",
}


class SmtpSink:
    """Handle on the running sink: its SMTP_URL and its control API."""

    def __init__(self, smtp_port: int, http_port: int):
        self.smtp_port = smtp_port
        self.control = f"http://127.0.0.1:{http_port}"
        self.url = f"smtp://{SINK_USER}:{SINK_PASSWORD.replace('@', '%40')}@127.0.0.1:{smtp_port}"

    def messages(self) -> list[dict]:
        """Every message the sink kept, oldest first (a resend is a second entry with the same message_id)."""
        response = requests.get(self.control + "/__sandbox/messages", timeout=5)
        response.raise_for_status()
        return response.json()

    def set_mode(self, mode: str, times: int | None = None, delay_s: float | None = None) -> None:
        """ok, fail_451, fail_550 or slow_ack, for the next `times` messages (or until changed)."""
        body: dict = {"mode": mode}
        if times is not None:
            body["times"] = times
        if delay_s is not None:
            body["delay_s"] = delay_s
        requests.post(self.control + "/__sandbox/mode", json=body, timeout=5).raise_for_status()

    def reset(self) -> None:
        """Forget the messages, back to ok."""
        requests.post(self.control + "/__sandbox/reset", timeout=5).raise_for_status()

    def with_mail(self, settings: Settings) -> Settings:
        """`settings` with mail on, sent to this sink with the test cadences."""
        return replace(settings, mail=mail_settings({"SMTP_URL": self.url, **MAIL_TEST_ENV}))


def start_sink(workdir: Path) -> tuple[subprocess.Popen, SmtpSink]:
    """Start the sink process and wait until it answers."""
    sink = SmtpSink(free_port(), free_port())
    with open(workdir / "smtp_sink.log", "ab") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sandbox.smtp_sink",
                "--smtp-port",
                str(sink.smtp_port),
                "--port",
                sink.control.rsplit(":", 1)[1],
            ]
            + ["--user", SINK_USER, "--password", SINK_PASSWORD],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def answers() -> bool:
        try:
            return requests.get(sink.control + "/__sandbox/health", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    wait_until(answers, timeout=20, message=f"the SMTP sink did not start (log in {workdir})")
    return proc, sink


class Senders:
    """Maintenance runner processes (the email sender) started by one test; all stopped at teardown."""

    def __init__(self, sink: SmtpSink):
        self.sink = sink
        self.workdir = Path(tempfile.mkdtemp(prefix="nexo-mail-"))
        self.procs: list[subprocess.Popen] = []

    def start(self, **env: str) -> subprocess.Popen:
        """`python -m jobs.retention --every 86400` with SMTP_URL at the sink (env overrides; SMTP_URL="" unsets it)."""
        full = {**os.environ, "SMTP_URL": self.sink.url, **MAIL_TEST_ENV, "PYTHONUNBUFFERED": "1", **env}
        log_path = self.workdir / f"runner-{len(self.procs)}.log"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "jobs.retention", "--every", "86400"],
                cwd=ROOT,
                env=full,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proc.log_path = log_path  # type: ignore[attr-defined]
        self.procs.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen) -> None:
        """kill -9: no clean stop, no lease released, an SMTP conversation cut where it stands."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop_all(self) -> None:
        """SIGTERM each, then kill -9 what does not stop."""
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.kill(proc)

    @staticmethod
    def log(proc: subprocess.Popen) -> str:
        """What the runner wrote."""
        return proc.log_path.read_text(errors="replace")  # type: ignore[attr-defined]
