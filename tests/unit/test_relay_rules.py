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


def test_a_claim_has_its_batch_written_in_and_takes_only_a_count_of_events():
    from nexo.outbox.repository import claim_sql

    every, given = claim_sql(8, given_ids=False), claim_sql(8, given_ids=True)
    assert "LIMIT 8\n" in every and "%(limit)s" not in every  # a bound LIMIT is planned again on every call (ADR-008)
    assert "%(ids)b" in given and "%(ids)" not in every
    assert "LIMIT %(limit)s" in given and claim_sql(16, given_ids=True) is given  # its plan is the same for any size
    assert claim_sql(8, given_ids=False) is every  # one text per size: psycopg prepares it once per connection
    claim_sql(1, given_ids=False)  # True hashes like 1: a check behind the cache would let it through now
    for wrong in (0, -1, 2.5, "8; DROP TABLE outbox_event", True):
        with pytest.raises(ValueError):
            claim_sql(wrong, given_ids=False)
