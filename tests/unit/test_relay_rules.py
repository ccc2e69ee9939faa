"""Pure rules of the relay: backoff (ADR-008's LEAST(cap, base × 2^attempts)) and answer classification."""

from __future__ import annotations

import pytest

from nexo.outbox.destinations import DELIVERED, PERMANENT, TRANSIENT, classify
from nexo.outbox.relay import backoff_s
from nexo.outbox.wakeup import job_id


def test_backoff_doubles_per_attempt_and_stops_at_the_cap():
    assert [backoff_s(n, 1.0, 3600.0) for n in range(1, 6)] == [2.0, 4.0, 8.0, 16.0, 32.0]
    assert backoff_s(12, 1.0, 3600.0) == 3600.0
    assert backoff_s(10_000, 1.0, 3600.0) == 3600.0  # no overflow after very many attempts
    assert backoff_s(3, 0.1, 1.0) == pytest.approx(0.8)


@pytest.mark.parametrize(
    "status,kind",
    [
        (200, DELIVERED),
        (201, DELIVERED),
        (204, DELIVERED),
        (408, TRANSIENT),
        (429, TRANSIENT),
        (500, TRANSIENT),
        (503, TRANSIENT),
        (504, TRANSIENT),
        (400, PERMANENT),
        (401, PERMANENT),
        (404, PERMANENT),
        (409, PERMANENT),
        (422, PERMANENT),
        (302, PERMANENT),
    ],
)
def test_answers_are_classified_as_delivered_transient_or_permanent(status, kind):
    assert classify(status) == kind


def test_one_wakeup_job_id_per_event():
    assert job_id("3f1c") == job_id("3f1c") != job_id("3f1d")
