"""Pure rules of the dead-letter pages: the fresh-login window, its setting, the money format, the form shapes."""

from __future__ import annotations

import pytest

from nexo.deadletters.fresh_login import is_fresh
from nexo.formatting import format_ars as money
from nexo.settings import Settings, SettingsError


@pytest.mark.parametrize(
    ("login_at", "now", "fresh"),
    [
        (1000.0, 1000.0, True),
        (1000.0, 1900.0, True),
        (1000.0, 1900.1, False),
        (None, 1000.0, False),
        ("1000", 1000.0, False),
        (2000.0, 1000.0, False),
    ],
)
def test_a_login_is_fresh_only_within_the_window(login_at, now, fresh):
    assert is_fresh(login_at, now, 900) is fresh


BASE = {"NEXO_ENV": "test", "DATABASE_URL": "postgresql://localhost/nexo", "REDIS_URL": "redis://localhost/0"}


def test_the_window_defaults_to_fifteen_minutes_and_refuses_nonsense():
    assert Settings.from_env(BASE).dlq_fresh_login_s == 900
    assert Settings.from_env({**BASE, "DLQ_FRESH_LOGIN_S": "60"}).dlq_fresh_login_s == 60
    for bad in ("0", "-5", "soon"):
        with pytest.raises(SettingsError, match="DLQ_FRESH_LOGIN_S"):
            Settings.from_env({**BASE, "DLQ_FRESH_LOGIN_S": bad})


@pytest.mark.parametrize(
    ("cents", "text"), [(1_250_000, "$ 12.500,00"), (5, "$ 0,05"), (0, "$ 0,00"), (-123_456, "-$ 1.234,56"), (None, "—")]
)
def test_money_is_shown_as_argentine_pesos(cents, text):
    assert money(cents) == text
