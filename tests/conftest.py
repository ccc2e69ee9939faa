"""Fixtures shared by every folder: settings, the database, Redis, the app, a test client, an auth helper.

Each folder's conftest.py says what its tests start from: tests/unit/ touches neither Postgres nor
Redis; tests/integration/ and tests/e2e/ start every test from a clean database and Redis
(clean_database_and_redis). The suite runs through `make test`, which starts (or points at) a real
Postgres and Redis and sets DATABASE_URL and REDIS_URL; nothing here is mocked.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis as redis_lib

from nexo import create_app, demo
from nexo.db import Database
from nexo.settings import Settings
from tests.helpers import DEMO_PASSWORD, csrf_token, running_gunicorn

pytest_plugins = ["tests.relay_fixtures"]

ROOT = Path(__file__).resolve().parent.parent
# Everything but the reference data the migrations insert (roles, permissions) and the migrations record.
KEEP_TABLES = {"schema_migrations", "role", "permission", "role_permission"}


@pytest.fixture(scope="session")
def settings() -> Settings:
    if not os.environ.get("DATABASE_URL") or not os.environ.get("REDIS_URL"):
        pytest.exit("run the tests with `make test` (it provides Postgres and Redis)", returncode=2)
    return Settings.from_env()


@pytest.fixture(scope="session")
def db(settings) -> Database:
    database = Database(settings.database_url, max_size=40, name="tests")
    yield database
    database.close()


@pytest.fixture(scope="session")
def redis_client(settings) -> redis_lib.Redis:
    return redis_lib.Redis.from_url(settings.redis_url)


def reset_database(db: Database) -> None:
    """Empty every data table and load the Nexo morning again."""
    with db.transaction() as tx:
        tables = [
            r["tablename"]
            for r in tx.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
            if r["tablename"] not in KEEP_TABLES
        ]
        # The audit log refuses TRUNCATE to everyone; the tests lift that inside this one transaction.
        tx.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_truncate")
        tx.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " RESTART IDENTITY CASCADE")
        tx.execute("ALTER TABLE audit_log ENABLE TRIGGER audit_log_no_truncate")
        demo.load(tx.conn, DEMO_PASSWORD)
        tx.commit()


@pytest.fixture
def clean_database_and_redis(request):
    """The Nexo morning in an otherwise empty database, and an empty Redis (skipped for @pytest.mark.no_db)."""
    if request.node.get_closest_marker("no_db"):
        return
    reset_database(request.getfixturevalue("db"))
    request.getfixturevalue("redis_client").flushdb()


@pytest.fixture(scope="session")
def app():
    application = create_app(test_config={"TESTING": True})
    yield application
    application.extensions["nexo.db"].close()


@pytest.fixture
def client(app):
    return app.test_client()


class AuthActions:
    """Log a test client in and out through the real login form."""

    def __init__(self, client):
        self.client = client

    def login(self, username: str = "vendedor1", password: str = DEMO_PASSWORD, next: str | None = None):
        url = "/login" + (f"?next={next}" if next else "")
        token = csrf_token(self.client.get(url).get_data(as_text=True))
        return self.client.post(url, data={"username": username, "password": password, "csrf_token": token})

    def logout(self):
        token = csrf_token(self.client.get("/", follow_redirects=True).get_data(as_text=True))
        return self.client.post("/logout", data={"csrf_token": token})


@pytest.fixture
def auth(client) -> AuthActions:
    return AuthActions(client)


@pytest.fixture(scope="session")
def live_server(settings):
    """The app under gunicorn, as `make run` starts it, on a free port; yields its base URL."""
    with running_gunicorn({"WEB_WORKERS": "2", "WEB_THREADS": "8"}) as base:
        yield base
