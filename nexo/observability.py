"""Request ids on every log line, for web requests and for the RQ jobs a request caused."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import uuid

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


def new_request_id(incoming: str | None = None) -> str:
    """Reuse a well-formed incoming X-Request-ID (from a proxy) or make a new one."""
    if incoming and _SAFE_ID.match(incoming):
        return incoming
    return uuid.uuid4().hex


def bind_request_id(value: str | None) -> contextvars.Token:
    """Make value the request id of the log lines that follow (in this thread or job)."""
    return request_id_var.set(value or "-")


class RequestIdFilter(logging.Filter):
    """Stamp every record with the current request id."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, request id, message (and the exception, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"), "level": record.levelname,
                 "logger": record.name, "request_id": getattr(record, "request_id", "-"),
                 "msg": record.getMessage()}
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: int = logging.INFO) -> None:
    """Structured logs on stderr for this process (web worker, RQ worker, sweeper)."""
    root = logging.getLogger()
    if any(isinstance(h.formatter, JsonFormatter) for h in root.handlers):
        return
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdFilter())
    root.handlers[:] = [handler]
    root.setLevel(level)
