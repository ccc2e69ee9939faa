"""The warehouse system's fake: POST /handoffs opens one preparation ticket per Idempotency-Key."""

from __future__ import annotations

from sandbox.common import serve


def ticket(seq: int) -> dict:
    """The warehouse's answer for the seq-th handoff it receives."""
    return {"ticket": f"PREP-{seq:06d}", "status": "RECIBIDO"}


if __name__ == "__main__":
    serve("warehouse", "handoffs", ticket)
