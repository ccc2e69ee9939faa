"""End-to-end tests: HTTP through the app (and a real browser where it matters), every test from a clean
database and Redis. The real-browser fixtures live in browser_fixtures.py (see its docstring)."""

from __future__ import annotations

import pytest

from tests.e2e.browser_fixtures import (  # noqa: F401
    axe_core,
    browser,
    browser_web,
    browser_without_bfcache,
    chromium_type,
    people,
    shots,
)


@pytest.fixture(autouse=True)
def clean_state(clean_database_and_redis):
    """The Nexo morning and an empty Redis before each test (tests/conftest.py)."""
