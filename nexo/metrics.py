"""Hooks the use cases call to feed the operations signals (issue 7 fills these in).

They must be cheap and must never raise: a metric is never a reason to fail an order.
"""

from __future__ import annotations


def observe_order_transaction(seconds: float, outcome: str) -> None:
    """Duration of one create_order/approval transaction (seed signal 5); outcome e.g. 'confirmed'."""


def count_request_id_reused() -> None:
    """One `request_id_reused` conflict happened (seed signal 3)."""
