"""The warehouse system's fake: POST /handoffs opens one preparation ticket per Idempotency-Key, and
POST /handoff-cancellations withdraws a handoff it received."""

from __future__ import annotations

from sandbox.common import Resource, serve


def ticket(seq: int, _cancelled: dict | None) -> dict:
    """The warehouse's answer for the seq-th handoff it receives."""
    return {"ticket": f"PREP-{seq:06d}", "status": "RECIBIDO"}


def cancellation(seq: int, cancelled: dict | None) -> dict:
    """The warehouse's answer for the seq-th handoff withdrawn, naming the ticket it closes."""
    return {"cancellation": f"ANUL-{seq:06d}", "ticket": (cancelled or {}).get("ticket"), "status": "ANULADO"}


RESOURCES = [
    Resource("handoffs", "handoff", ticket),
    Resource("handoff-cancellations", "handoff_cancellation", cancellation, cancels="handoff_key"),
]

if __name__ == "__main__":
    serve("warehouse", RESOURCES)
