"""How a fake answers: its current mode, and the misbehaving answers a relay must survive.

CONTRACT.md's five modes (ok, timeout_before, timeout_after, error_5xx, error_4xx) are handled in
common.py. The modes below extend them (guarantee 16) and never change them; they exist so that the
relay's deadline, byte cap and storable error text are tested over real HTTP against a real
misbehaving server, not against a mock (`POST /__sandbox/mode` takes their extra fields):

- ``error_4xx_nul``: 400 whose text body carries NUL and other control bytes (psycopg refuses NUL in text);
- ``error_4xx_bad_charset``: 400 whose Content-Type names a charset no codec knows (``charset=bogus``);
- ``dribble``: applies the effect, then sends its answer one byte every ``interval_s`` seconds;
- ``slow_headers``: sends a status line, then header bytes one every ``interval_s``, never ending them;
- ``huge_body``: answers ``status`` with ``size_bytes`` (20 MB) of body, ``interval_s`` between 64 KiB chunks;
- ``no_answer``: reads the request and sends nothing for ``delay_s`` seconds, then hangs up.
Nothing is applied by any of them but ``dribble``. And ``slow`` waits ``delay_s`` seconds, then
applies and answers as ``ok`` does.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from flask import Response, request

CONTRACT_MODES = ("ok", "timeout_before", "timeout_after", "error_5xx", "error_4xx")
EXTRA_MODES = ("error_4xx_nul", "error_4xx_bad_charset", "dribble", "slow_headers", "huge_body", "no_answer")
# A destination that takes its time before it applies, and still answers within the deadline when
# delay_s is short: a request in flight that another request can overtake (ADR-017's ordering tests).
SLOW_MODES = ("slow",)
MODES = CONTRACT_MODES + EXTRA_MODES + SLOW_MODES
DEFAULT_DELAY_S = 30.0


@dataclass
class Mode:
    """What the fake does with the next requests; `times` None means until changed."""

    name: str = "ok"
    times: int | None = None
    delay_s: float = DEFAULT_DELAY_S  # timeout modes, slow_headers, no_answer: how long
    interval_s: float = 0.5  # dribble, slow_headers: between bytes; huge_body: between chunks
    size_bytes: int = 20_000_000  # huge_body
    status: int = 200  # huge_body


def parse_mode(body: dict) -> Mode | str:
    """The Mode a POST /__sandbox/mode body asks for, or the reason it is refused."""
    mode = Mode(name=body.get("mode", "ok"), times=body.get("times"))
    if mode.name not in MODES:
        return f"mode must be one of {', '.join(MODES)}"
    if mode.times is not None and (not isinstance(mode.times, int) or mode.times < 1):
        return "times must be a positive whole number or omitted"
    for name in ("delay_s", "interval_s"):
        value = body.get(name, getattr(mode, name))
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            return f"{name} must be a non-negative number"
        setattr(mode, name, float(value))
    for name, low, high in (("size_bytes", 0, 1_000_000_000), ("status", 100, 599)):
        value = body.get(name, getattr(mode, name))
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            return f"{name} must be a whole number from {low} to {high}"
        setattr(mode, name, value)
    return mode


class ModeSwitch:
    """The current failure mode, shared by the server's threads."""

    def __init__(self):
        self._lock = threading.Lock()
        self._mode = Mode()

    def set(self, mode: Mode) -> None:
        """Replace the current mode."""
        with self._lock:
            self._mode = mode

    def get(self) -> Mode:
        """The current mode, without consuming it."""
        with self._lock:
            return replace(self._mode)

    def take(self) -> Mode:
        """The mode for this request; a counted mode runs out and the fake goes back to ok."""
        with self._lock:
            current = replace(self._mode)
            if self._mode.times is not None:
                self._mode.times -= 1
                if self._mode.times <= 0:
                    self._mode = Mode()
            return current


def misbehave(mode: Mode, apply: Callable[[], tuple[int, dict]]) -> Response:
    """The answer of one of the EXTRA_MODES."""
    if mode.name == "dribble":
        return dribble(mode, apply)
    return {
        "error_4xx_nul": error_4xx_nul,
        "error_4xx_bad_charset": error_4xx_bad_charset,
        "slow_headers": slow_headers,
        "huge_body": huge_body,
        "no_answer": no_answer,
    }[mode.name](mode)


NUL_BODY = b"solicitud rechazada\x00por el destino\x01\x07\x1b[31m (campo\x00 cliente)\r\n\x7f fin"
HUGE_CHUNK = 64 * 1024
SLOW_LIMIT_S = 120.0  # a dribble nobody reads any more stops here at the latest


def error_4xx_nul(_mode) -> Response:
    """A permanent refusal whose body is text with NUL and control bytes in it."""
    return Response(NUL_BODY, status=400, content_type="text/plain; charset=utf-8")


def error_4xx_bad_charset(_mode) -> Response:
    """A permanent refusal labelled with a charset Python has no codec for."""
    return Response("solicitud rechazada: campo inválido".encode(), status=400, content_type="text/plain; charset=bogus")


def dribble(mode, apply: Callable[[], tuple[int, dict]]) -> Response:
    """Apply the effect, then send the (correct) answer one byte per interval_s."""
    status, body = apply()
    data = json.dumps(body).encode()

    def one_byte_at_a_time() -> Iterator[bytes]:
        deadline = time.monotonic() + SLOW_LIMIT_S
        for byte in data:
            if time.monotonic() > deadline:
                return
            time.sleep(mode.interval_s)
            yield bytes([byte])

    return Response(
        one_byte_at_a_time(), status=status, content_type="application/json", headers={"Content-Length": str(len(data))}
    )


def slow_headers(mode) -> Response:
    """Write a status line and then header bytes forever (one per interval_s), never the blank line."""
    conn: socket.socket = request.environ["werkzeug.socket"]
    deadline = time.monotonic() + min(mode.delay_s, SLOW_LIMIT_S)
    try:
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        while time.monotonic() < deadline:
            time.sleep(mode.interval_s)
            conn.sendall(b"z")
    except OSError:
        pass  # the client gave up, which is the point
    _hang_up(conn)
    return Response(status=200)  # werkzeug's own write now fails on the closed socket and is dropped


def huge_body(mode) -> Response:
    """Answer `status` with size_bytes of filler, in 64 KiB chunks interval_s apart."""

    def chunks() -> Iterator[bytes]:
        left = mode.size_bytes
        while left > 0:
            piece = min(HUGE_CHUNK, left)
            left -= piece
            yield b"x" * piece
            if mode.interval_s:
                time.sleep(mode.interval_s)

    return Response(chunks(), status=mode.status, content_type="text/plain", headers={"Content-Length": str(mode.size_bytes)})


def no_answer(mode) -> Response:
    """Send nothing at all for delay_s seconds, then hang up without a byte."""
    conn: socket.socket = request.environ["werkzeug.socket"]
    time.sleep(mode.delay_s)
    _hang_up(conn)
    return Response(status=200)


def _hang_up(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):  # the peer may have gone already
        conn.shutdown(socket.SHUT_RDWR)
