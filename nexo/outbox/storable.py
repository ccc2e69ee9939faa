"""Text from outside (a destination's body, an exception message) made fit to write in Postgres (guarantee 16).

Postgres refuses NUL in text and jsonb: one NUL in a destination's error body once made recording an
outcome raise, again and again, so the event was never failed (ADR-014). Every write of such text
goes through storable_text first: control characters out, length capped.
"""

from __future__ import annotations

import unicodedata
from typing import overload

ERROR_TEXT_LIMIT = 500  # characters of an error kept on an attempt, an event or a dead letter
_WHITESPACE = {"\t": " ", "\n": " ", "\r": " "}


@overload
def storable_text(text: str, limit: int = ...) -> str: ...
@overload
def storable_text(text: None, limit: int = ...) -> None: ...
@overload
def storable_text(text: str | None, limit: int = ...) -> str | None: ...


def storable_text(text: str | None, limit: int = ERROR_TEXT_LIMIT) -> str | None:
    """Text without NUL, control characters or lone surrogates, at most `limit` characters (ending in …)."""
    if text is None:
        return None
    # Cc: C0/C1 controls, NUL and DEL included; Cs: surrogates, which no UTF-8 encoder accepts.
    # Tabs and line breaks become spaces, so an excerpt still reads as words.
    cleaned = "".join(
        _WHITESPACE.get(ch, ch) for ch in text[: limit * 8] if ch in _WHITESPACE or unicodedata.category(ch) not in ("Cc", "Cs")
    )
    if len(cleaned) > limit:
        cleaned = cleaned[: limit - 1] + "…"
    return cleaned
