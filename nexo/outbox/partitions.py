"""The outbox's partitions (migration 0700, ADR-019): the names every query of outbox_event and
delivery_attempt uses to say which partitions it reads.

An event that can still be claimed, retried, replayed or withdrawn has settled_on 9999-12-31 and is in the
live partition; a settled one is filed in the partition of the month it settled (nexo/outbox/history.py).
"""

from __future__ import annotations

from datetime import UTC, date, datetime

# The live partitions: the relay's queue and its open attempts. Its statements name them, not the
# partitioned tables: Postgres then plans, locks and reads these tables alone, exactly as it did the whole
# table before 0700. Said through the partitioned table with `settled_on = 9999-12-31` instead, the claim
# cost a third more on the delivery floor: the planner kept that always-true condition and combined a
# second index scan for it (docs/performance.md, 2026-12-07). Only filing, which moves a row to its month,
# has to go through the partitioned table.
LIVE_EVENTS = "outbox_event_live"
LIVE_ATTEMPTS = "delivery_attempt_live"
LIVE_DAY = "'9999-12-31'::date"  # settled_on while an event is live


def settled_since(entered_at: datetime) -> date:
    """The first day an order's events can have settled on: the UTC day the order was entered.

    A read of one order's events bounds settled_on with it, so Postgres plans the months from the
    order's on (and the live partition), not every month of history.
    """
    return entered_at.astimezone(UTC).date()
