"""Where one request's time goes, for its Server-Timing header (SERVER_TIMING=on, docs/settings.md).

The bench's mixed phase splits the order POST's tail with it (ADR-011): a salesperson waits on the p99,
and a p99 alone does not say whether it was spent waiting for a gunicorn thread, for a database
connection, inside the transaction (its row-lock waits included) or in Python. The parts:

- queue: from the client's `X-Request-Start: t=<unix seconds>` to the first request hook (the listen
  backlog and the wait for a free worker thread); only when the client sends it, as a proxy would;
- pool: waiting for a connection of this process's pool (nexo/db.py);
- tx: connections held, transactions and their lock waits included;
- app: the first request hook to the response, pool and tx included.

Kept in a context variable of the request's thread: work outside a request (workers, the relay, a
background thread of the web process) records nothing, at the cost of one lookup.
"""

from __future__ import annotations

import contextvars

_spent: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar("request_timing", default=None)


def begin() -> None:
    """Start counting for the current request."""
    _spent.set({})


def end() -> None:
    """Stop counting: the thread's next work, request or not, starts from nothing."""
    _spent.set(None)


def add(part: str, seconds: float) -> None:
    """Count `seconds` to `part` of the current request (nothing outside a request)."""
    spent = _spent.get()
    if spent is not None:
        spent[part] = spent.get(part, 0.0) + seconds


def spent() -> dict[str, float]:
    """Seconds per part so far in the current request."""
    return dict(_spent.get() or {})


def request_start(header: str | None) -> float | None:
    """The unix time of an `X-Request-Start` header ("t=1733230000.123" or bare seconds); None if absent or
    unreadable (a header is a claim of the client: garbage is ignored, never an error)."""
    if not header:
        return None
    text = header.strip().removeprefix("t=")
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value > 0 else None


def header(parts: dict[str, float]) -> str:
    """The Server-Timing value of `parts` (seconds), in milliseconds."""
    return ", ".join(f"{name};dur={seconds * 1000:.2f}" for name, seconds in parts.items())
