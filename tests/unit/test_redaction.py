"""URLs are never echoed with their password: settings errors, log lines, tracebacks (ADR-018)."""

from __future__ import annotations

import logging

import hypothesis
import pytest
from hypothesis import strategies as st

from nexo.observability import JsonFormatter, _mask_secrets, redact
from nexo.settings import Settings, SettingsError, redact_url

BASE = {"NEXO_ENV": "test", "DATABASE_URL": "postgresql://localhost/nexo", "REDIS_URL": "redis://localhost:6379/0"}


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://nexo:s3cr3t@db.internal:5432/nexo", "postgresql://nexo:***@db.internal:5432/nexo"),
        ("redis://:s3cr3t@cache:6379/0", "redis://:***@cache:6379/0"),
        ("rediss://default:s3cr3t@cache:6380", "rediss://default:***@cache:6380"),
        ("postgresql://nexo@db/nexo", "postgresql://nexo@db/nexo"),  # nothing to hide
        # A password typed with a raw @ (not %40): hidden to the last @ before the path, none of it shown.
        ("postgresql://nexo:p@ss@db.internal:5432/nexo", "postgresql://nexo:***@db.internal:5432/nexo"),
        ("redis://:a@b@c@cache:6379/0", "redis://:***@cache:6379/0"),
        ("postgresql://nexo:p@ss@h1:5432,h2:5433/nexo", "postgresql://nexo:***@h1:5432,h2:5433/nexo"),
        # An @ after the path or in the query is not a password's.
        ("postgresql://nexo@db/nexo?application_name=a@b", "postgresql://nexo@db/nexo?application_name=a@b"),
    ],
)
def test_urls_lose_their_password(url, shown):
    assert redact_url(url) == shown
    assert redact(f"could not connect to {url} (timeout)") == f"could not connect to {shown} (timeout)"


@pytest.mark.parametrize("password", ["s3cr3t", "s3c@r3t"])
def test_a_mistyped_database_url_is_named_without_its_password(password):
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(dict(BASE, DATABASE_URL=f"postgres-ql://nexo:{password}@db/nexo"))
    said = str(caught.value)
    assert "DATABASE_URL" in said and "s3c" not in said and "r3t" not in said, said


def test_two_urls_in_one_line_each_lose_their_password():
    line = "postgresql://nexo:p@ss@db/nexo, then redis://:x@y@cache:6379/0"
    assert redact(line) == "postgresql://nexo:***@db/nexo, then redis://:***@cache:6379/0"


def test_a_production_redis_without_password_is_named_without_echoing_secrets():
    env = dict(BASE, NEXO_ENV="production", SECRET_KEY="x" * 32, METRICS_TOKEN="t", DATABASE_URL="postgresql://n:pw1@db/n")
    with pytest.raises(SettingsError, match="REDIS_URL.*no password"):
        Settings.from_env(dict(env, REDIS_URL="redis://user@cache:6379/0"))


def test_a_log_line_with_a_url_is_written_without_its_password():
    for url in ("postgresql://nexo:s3cr3t@db/nexo", "postgresql://nexo:s3c@r3t@db/nexo"):
        record = logging.LogRecord("nexo", logging.ERROR, __file__, 1, "pool failed: %s", (url,), None)
        written = JsonFormatter().format(record)
        assert "s3c" not in written and "r3t" not in written, written


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"SECRET_KEY": ""}, "SECRET_KEY"),
        ({"REDIS_URL": "redis://cache:6379/0"}, "REDIS_URL"),
        ({"METRICS_TOKEN": ""}, "METRICS_TOKEN"),
    ],
)
def test_production_settings_name_what_is_missing(env, named):
    complete = dict(BASE, NEXO_ENV="production", SECRET_KEY="x" * 32, METRICS_TOKEN="t", REDIS_URL="redis://:pw@cache:6379/0")
    Settings.from_env(complete)  # complete: accepted
    Settings.from_env(dict(complete, METRICS_TOKEN="", METRICS_PORT="9100"))  # the separate port instead of the token
    Settings.from_env(dict(complete, REDIS_URL="rediss://cache:6380/0"))  # TLS instead of a password
    with pytest.raises(SettingsError, match=named):
        Settings.from_env({**complete, **env})


def test_session_limits_accept_any_value_from_one_second():
    settings = Settings.from_env(dict(BASE, SESSION_IDLE_S="1", SESSION_MAX_S="1"))
    assert settings.security.session_idle_s == 1 and settings.security.session_max_s == 1
    with pytest.raises(SettingsError, match="SESSION_IDLE_S"):
        Settings.from_env(dict(BASE, SESSION_IDLE_S="0.5"))


_FRAGMENTS = [
    "Bearer ",
    "bEaReR ",
    "password",
    "PASSWD",
    "secret",
    "Token",
    "csrf_token",
    "session",
    "Set-Cookie",
    "cookie",
    "authorization",
    ":",
    "=",
    '"',
    "'",
    " ",
    "@",
    "/",
    "//",
    "://",
    "postgresql",
    "redis",
    "abc",
    "ſ",
    "ı",
    "K",
    "\n",
]


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=3), min_size=1, max_size=12).map("".join))
@pytest.mark.parametrize("fragment", [f for f in _FRAGMENTS if f.strip(" :=\"'@/\n")])
def test_the_shortcut_for_lines_without_secret_words_never_changes_what_is_masked(fragment, text):
    # redact() skips its scans for an ASCII line that names none of the words; the scans must agree.
    for line in (text, f"{fragment} {text}", f"{fragment}: {text}", f"{fragment}={text}"):
        assert redact(line) == _mask_secrets(line), line
