"""jobs/deliver.py: the relay's RQ job."""

from __future__ import annotations

import pytest

from jobs import deliver

pytestmark = pytest.mark.no_db


def test_a_drain_called_outside_an_rq_job_says_it_needs_one(monkeypatch):
    # A drain clears its queue's flag and may ring the next drain on that queue: without the rq job
    # running it there is no queue to name, and it refuses before delivering anything.
    monkeypatch.setattr(deliver, "_context", object())
    with pytest.raises(RuntimeError, match="rq job"):
        deliver.deliver_events([], drain=True)
