"""The outbox's partitions (migration 0700, ADR-019): the words every query of outbox_event and
delivery_attempt uses to say which partitions it reads.

An event that can still be claimed, retried, replayed or withdrawn has settled_on 9999-12-31 and is in the
live partition; a settled one is filed in the partition of the month it settled (nexo/outbox/history.py).
"""

from __future__ import annotations

from datetime import UTC, date, datetime

# The live partition. Named as a constant, so that Postgres plans and locks that partition alone, prepared
# or not, however many months of history lie beside it.
LIVE = "'9999-12-31'::date"


def settled_since(entered_at: datetime) -> date:
    """The first day an order's events can have settled on: the UTC day the order was entered.

    A read of one order's events bounds settled_on with it, so Postgres plans the months from the
    order's on (and the live partition), not every month of history.
    """
    return entered_at.astimezone(UTC).date()
