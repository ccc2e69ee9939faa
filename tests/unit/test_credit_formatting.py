"""Pure pieces of the credit pages: waiting times and the queue's filters."""

import uuid

import pytest

from nexo.credit.forms import QueueFilters
from nexo.credit.service import CreditFigures
from nexo.formatting import format_duration


@pytest.mark.parametrize(
    "seconds, text",
    [
        (None, "—"),
        (0, "menos de 1 min"),
        (59, "menos de 1 min"),
        (60, "1 min"),
        (3599, "59 min"),
        (3600, "1 h 00 min"),
        (7500, "2 h 05 min"),
        (86400, "1 d 0 h"),
        (2 * 86400 + 4 * 3600 + 59, "2 d 4 h"),
        (-5, "menos de 1 min"),
    ],
)
def test_waiting_time_reads_at_a_glance(seconds, text):
    assert format_duration(seconds, to_the_minute=True) == text


def test_queue_filters_keep_well_formed_values_only():
    client = uuid.uuid4()
    filters = QueueFilters.from_args({"client": str(client), "tier": " platino ", "salesperson": "7"})
    assert filters == QueueFilters(client, "PLATINO", 7)
    assert filters.query_args() == {"client": str(client), "tier": "PLATINO", "salesperson": "7"}


@pytest.mark.parametrize("args", [{"client": "x"}, {"tier": "ORO"}, {"salesperson": "-1"}, {"salesperson": "9" * 20}, {}])
def test_malformed_queue_filters_are_ignored(args):
    filters = QueueFilters.from_args(args)
    assert filters == QueueFilters() and not filters and filters.query_args() == {}


def test_excess_is_what_the_client_ends_over_its_limit_if_authorized():
    assert CreditFigures(exposure_cents=99_000_000, limit_cents=100_000_000, total_cents=1_600_000).excess_cents == 600_000
    assert CreditFigures(exposure_cents=0, limit_cents=5_000_000, total_cents=1_000).excess_cents == -4_999_000
