"""After a commit, wake the relay so new events go out at once (issue 5 fills this in).

Losing the wake-up only delays an event: the sweeper finds every due PENDIENTE row (ADR-004).
So this never raises, and it must only be called after the transaction committed.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def request_delivery(event_ids) -> None:
    """Ask the RQ workers to deliver these committed events now; never raises."""
    log.debug("wake-up requested for %d event(s)", len(list(event_ids)))
