"""Structured logs: one JSON object per line, each with the request id of the request (or job) behind it.

- Web: create_app binds a request id per request (a well-formed incoming X-Request-ID or a new one)
  and echoes it in the X-Request-ID response header; init_app unbinds it when the request ends, so a
  line logged later by the same thread is not attributed to the wrong request.
- gunicorn: GunicornLogger (scripts/gunicorn_conf.py) writes gunicorn's own lines as JSON too, and the
  access line takes its request id from the response's X-Request-ID.
- RQ jobs: the job binds the id of the request that caused it (`with request_id_scope(rid):`).
- Never passwords, tokens or cookies: nothing logs them on purpose, and redact() masks the shapes
  they take (a Bearer token, password=..., a Cookie header, the password of a `scheme://user:pass@`
  URL) should one slip into a message or a traceback.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import re
import time
import uuid
from collections.abc import Iterator

from flask import g, request
from gunicorn.glogging import Logger as _GunicornBaseLogger

from nexo import request_timing

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
# The words that name a secret: `key=value` / `key: value` shapes, and headers whose whole value is one.
# redact() below skips lines that hold none of them, so a word added here is looked for there too.
_SECRET_KEYS = ("password", "passwd", "secret", "token", "session", "csrf_token")
_SECRET_HEADERS = ("cookie", "set-cookie", "authorization")
_SECRETS = re.compile(
    r"(?i)(bearer\s+)[^\s\"',;]+"
    rf"|(\b(?:{'|'.join(_SECRET_KEYS)})[\"']?\s*[=:]\s*[\"']?)[^\s\"'&,;]+"
    rf"|(\b(?:{'|'.join(_SECRET_HEADERS)})[\"']?\s*:\s*)[^\n\"]+"
)


def new_request_id(incoming: str | None = None) -> str:
    """Reuse a well-formed incoming X-Request-ID (from a proxy) or make a new one."""
    if incoming and _SAFE_ID.match(incoming):
        return incoming
    return uuid.uuid4().hex


def bind_request_id(value: str | None) -> contextvars.Token:
    """Make value the request id of the log lines that follow (in this thread or job)."""
    return request_id_var.set(value or "-")


@contextlib.contextmanager
def request_id_scope(value: str | None) -> Iterator[str]:
    """Bind a request id for the duration of a block (an RQ job), then restore the previous one."""
    token = bind_request_id(value)
    try:
        yield request_id_var.get()
    finally:
        request_id_var.reset(token)


def init_app(app, *, server_timing: bool = False) -> None:
    """Bind a request id to each request (call before any other request hook), echo it, unbind it at the end;
    with server_timing, also count where the request's time goes and answer it in Server-Timing
    (nexo/request_timing.py)."""

    def bind_to_request():
        g.request_id = new_request_id(request.headers.get("X-Request-ID"))
        bind_request_id(g.request_id)
        if server_timing:
            request_timing.begin()
            g.timing = (time.time(), time.perf_counter())

    def echo_in_response(response):
        response.headers["X-Request-ID"] = g.get("request_id", "-")
        timing = g.get("timing")
        if timing is not None:
            received, began = timing
            parts = request_timing.spent()
            sent = request_timing.request_start(request.headers.get("X-Request-Start"))
            if sent is not None:
                parts["queue"] = max(0.0, received - sent)
            parts["app"] = time.perf_counter() - began
            response.headers["Server-Timing"] = request_timing.header(parts)
        return response

    def unbind_after_request(_error=None):
        request_id_var.set("-")
        if g.pop("timing", None) is not None:
            request_timing.end()

    app.before_request(bind_to_request)
    app.after_request(echo_in_response)
    app.teardown_request(unbind_after_request)


# The password of a URL (postgresql://nexo:PASSWORD@db/nexo, redis://:PASSWORD@cache:6379/0), to the last
# @ before the path: a password may hold a raw @ (nexo/settings.py redact_url has the same pattern).
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/?#\s:]*):[^/?#\s]*@")


# Every shape above contains one of these words: an ASCII line with none of them in any case (the relay's
# line per delivered event, most lines) skips both scans, half its logging CPU. Other lines are scanned
# always: (?i) also matches a few non-ASCII letters (ſ, ı, K) that lower() would not turn into these.
_SECRET_WORDS = ("://", "bearer", *_SECRET_KEYS, *_SECRET_HEADERS)


def redact(text: str) -> str:
    """text with anything shaped like a credential replaced by ***."""
    if text.isascii():
        lowered = text.lower()
        if not any(word in lowered for word in _SECRET_WORDS):
            return text
    return _mask_secrets(text)


def _mask_secrets(text: str) -> str:
    text = _URL_PASSWORD.sub(r"\1:***@", text)
    return _SECRETS.sub(lambda m: (m.group(1) or m.group(2) or m.group(3)) + "***", text)


class RequestIdFilter(logging.Filter):
    """Stamp every record with the current request id, unless the record names its own."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", None):
            record.request_id = request_id_var.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, request id, message, extra fields, exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "request_id": getattr(record, "request_id", None) or request_id_var.get(),
            "msg": redact(record.getMessage()),
        }
        entry.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            entry["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, ensure_ascii=False, default=str)


def _json_handler(handler: logging.Handler) -> logging.Handler:
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdFilter())
    return handler


def configure_logging(level: int = logging.INFO) -> None:
    """Structured logs on stderr for this process (web worker, RQ worker, sweeper)."""
    root = logging.getLogger()
    if any(isinstance(h.formatter, JsonFormatter) for h in root.handlers):
        return
    root.handlers[:] = [_json_handler(logging.StreamHandler())]
    root.setLevel(level)


class GunicornLogger(_GunicornBaseLogger):
    """gunicorn's error and access logs as JSON lines; access lines carry the response's X-Request-ID."""

    def setup(self, cfg) -> None:
        """Let gunicorn build its handlers, then make them write JSON."""
        super().setup(cfg)
        for logger in (self.error_log, self.access_log):
            for handler in logger.handlers:
                _json_handler(handler)

    def access(self, resp, req, environ, request_time) -> None:
        """One JSON line per request: method, path (no query string), status, duration, request id."""
        if not self.access_log_enabled:
            return
        status = resp.status.split(None, 1)[0] if isinstance(resp.status, str) else str(resp.status)
        headers = resp.headers.items() if hasattr(resp.headers, "items") else resp.headers
        request_id = next((v for k, v in headers if k.lower() == "x-request-id"), "-")
        fields = {
            "method": environ.get("REQUEST_METHOD"),
            "path": environ.get("PATH_INFO"),
            "status": int(status) if status.isdigit() else status,
            "duration_ms": request_time.seconds * 1000 + request_time.microseconds // 1000,
            "bytes": getattr(resp, "sent", None),
        }
        self.access_log.info(
            "%s %s %s", fields["method"], fields["path"], status, extra={"request_id": request_id, "fields": fields}
        )
