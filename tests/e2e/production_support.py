"""What a production start of a real process needs in the tests: a Redis that asks for a password (the
machine's shared one and the test run's own do not) and the environment CONTRACT.md names."""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECRET_KEY = "a-production-secret-key-of-some-length"
METRICS_TOKEN = "scraper-token"
# Empty is unset: what start_up_warnings looks at, and the metrics port, are each test's to set, even where
# a helper merges the test run's environment in again (tests/helpers.py running_gunicorn).
UNSET = {"TRUSTED_PROXIES": "", "COOKIE_SECURE": "", "METRICS_PORT": ""}


@contextlib.contextmanager
def redis_with_password() -> Iterator[str]:
    """A redis-server of this test's own with requirepass (scripts/stack.py embedded_redis); yields its URL."""
    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))
    import stack

    with (
        tempfile.TemporaryDirectory(prefix="nexo-redis-auth-") as data,
        stack.embedded_redis(Path(data), persist=False, password=secrets.token_hex(16)) as url,
    ):
        yield url


def production_env(database_url: str, redis_url: str, **extra: str) -> dict:
    """This process's environment for a production start of Nexo: exactly what CONTRACT.md asks, plus extra."""
    return {
        **{k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"},
        **UNSET,
        "NEXO_ENV": "production",
        "SECRET_KEY": SECRET_KEY,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "METRICS_TOKEN": METRICS_TOKEN,
        "PYTHONUNBUFFERED": "1",
        **extra,
    }
