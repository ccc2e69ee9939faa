"""The SMTP fake: a real SMTP server (aiosmtpd) that keeps what it receives, for Nexo's email tests.

`python -m sandbox.smtp_sink --smtp-port N --port M [--user U --password P]` listens for SMTP on N and for
its control API on M (HTTP, like the other fakes):

- ``GET /__sandbox/messages`` → every message received, oldest first: ``{"message_id", "mail_from",
  "rcpt_tos", "to", "subject", "body", "received_at"}``; a resend is a second entry with the same message_id;
- ``POST /__sandbox/mode`` with ``{"mode": M, "times": N, "delay_s": S}``: ``ok``; ``fail_451`` (the DATA
  is refused with a temporary 451, nothing kept); ``fail_550`` (refused for good, nothing kept);
  ``slow_ack`` (kept at once, the 250 sent only after ``delay_s``, default 30: a sender killed meanwhile
  has delivered without knowing it); ``times`` omitted = until changed;
- ``POST /__sandbox/reset``: messages forgotten, mode back to ``ok``; ``GET /__sandbox/health``.

With ``--user``/``--password`` the server requires AUTH (PLAIN or LOGIN, without TLS: a sandbox only), so
the tests go through the login that an SMTP_URL with credentials makes. Nothing in nexo/ imports this.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import threading
import time
from dataclasses import dataclass
from email import policy
from email.parser import BytesParser
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from flask import Flask, jsonify, request
from werkzeug.serving import make_server

MODES = ("ok", "fail_451", "fail_550", "slow_ack")
log = logging.getLogger("sandbox.smtp_sink")


@dataclass
class Mode:
    """What the sink does with the next messages; `times` None means until changed."""

    name: str = "ok"
    times: int | None = None
    delay_s: float = 30.0


class Sink:
    """The messages received and the current mode, shared by the SMTP loop and the HTTP threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.messages: list[dict] = []
        self.mode = Mode()

    def next_mode(self) -> Mode:
        """The mode for this message; a mode with `times` counts down, then the sink is `ok` again."""
        with self._lock:
            current = self.mode
            if current.times is not None:
                current.times -= 1
                if current.times <= 0:
                    self.mode = Mode()
            return Mode(current.name, None, current.delay_s)

    def keep(self, message: dict) -> None:
        """Store one received message."""
        with self._lock:
            self.messages.append(message)

    def listing(self) -> list[dict]:
        """A copy of every message received."""
        with self._lock:
            return list(self.messages)

    def reset(self) -> None:
        """Forget every message; back to `ok`."""
        with self._lock:
            self.messages.clear()
            self.mode = Mode()


class Handler:
    """aiosmtpd's handler: answer DATA as the mode says, and keep what was accepted."""

    def __init__(self, sink: Sink):
        self.sink = sink

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        """Refuse, keep, or keep and answer late; see the module docstring."""
        mode = self.sink.next_mode()
        if mode.name == "fail_451":
            return "451 4.3.0 Temporary failure, try again later"
        if mode.name == "fail_550":
            return "550 5.7.1 Message refused"
        parsed = BytesParser(policy=policy.default).parsebytes(envelope.content)
        body = parsed.get_body(preferencelist=("plain",))
        self.sink.keep(
            {
                "message_id": parsed["Message-ID"],
                "mail_from": envelope.mail_from,
                "rcpt_tos": list(envelope.rcpt_tos),
                "to": parsed["To"],
                "subject": parsed["Subject"],
                "body": body.get_content() if body is not None else "",
                "received_at": time.time(),
            }
        )
        log.info("kept message %s for %s (mode %s)", parsed["Message-ID"], ",".join(envelope.rcpt_tos), mode.name)
        if mode.name == "slow_ack":
            await asyncio.sleep(mode.delay_s)
        return "250 2.0.0 Message accepted"


class Credentials:
    """AUTH PLAIN / LOGIN against one user and password."""

    def __init__(self, user: str, password: str):
        self.user, self.password = user.encode(), password.encode()

    def __call__(self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
        """Accept exactly the configured user and password."""
        ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (self.user, self.password)
        return AuthResult(success=ok, handled=False)


def create_control(sink: Sink) -> Flask:
    """The HTTP control API (module docstring)."""
    app = Flask("smtp_sink")

    @app.get("/__sandbox/messages")
    def messages():
        return jsonify(sink.listing())

    @app.post("/__sandbox/mode")
    def change_mode():
        body = request.get_json(silent=True) or {}
        name, times, delay_s = body.get("mode", "ok"), body.get("times"), body.get("delay_s", 30.0)
        if name not in MODES:
            return jsonify(error=f"mode must be one of {', '.join(MODES)}"), 400
        if times is not None and (not isinstance(times, int) or isinstance(times, bool) or times < 1):
            return jsonify(error="times must be a positive whole number or omitted"), 400
        if not isinstance(delay_s, int | float) or isinstance(delay_s, bool) or delay_s < 0:
            return jsonify(error="delay_s must be a non-negative number"), 400
        sink.mode = Mode(name, times, float(delay_s))
        return jsonify(mode=name, times=times, delay_s=delay_s)

    @app.post("/__sandbox/reset")
    def reset():
        sink.reset()
        return jsonify(status="reset")

    @app.get("/__sandbox/health")
    def health():
        return jsonify(status="ok")

    return app


def main() -> None:
    """Command-line entry point (module docstring)."""
    parser = argparse.ArgumentParser(description="Sandboxed SMTP sink for Nexo's email tests")
    parser.add_argument("--smtp-port", type=int, required=True)
    parser.add_argument("--port", type=int, required=True, help="the HTTP control API's port")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--user")
    parser.add_argument("--password")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s smtp_sink %(levelname)s %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    sink = Sink()
    auth: dict[str, Any] = {}
    if args.user:
        auth = {"authenticator": Credentials(args.user, args.password or ""), "auth_required": True, "auth_require_tls": False}
    smtp = Controller(Handler(sink), hostname=args.host, port=args.smtp_port, **auth)
    smtp.start()
    server = make_server(args.host, args.port, create_control(sink), threaded=True)
    log.info("SMTP on %s:%d, control on http://%s:%d", args.host, args.smtp_port, args.host, args.port)
    try:
        server.serve_forever()
    finally:
        smtp.stop()


if __name__ == "__main__":
    main()
