"""Integration tests run on real Postgres and Redis: every test starts from a clean database and Redis."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def clean_state(clean_database_and_redis):
    """The Nexo morning and an empty Redis before each test (tests/conftest.py)."""
