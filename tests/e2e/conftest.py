"""Fixtures of the end-to-end tests. The real-browser ones live in browser_fixtures.py (see its docstring)."""

from tests.e2e.browser_fixtures import (  # noqa: F401
    browser,
    browser_web,
    browser_without_bfcache,
    chromium_type,
    people,
    shots,
)
