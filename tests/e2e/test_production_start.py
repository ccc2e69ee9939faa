"""A production start needs exactly what CONTRACT.md says and refuses without it, naming it; the demo data
never reaches production; `make run` writes nothing others can read and its servers ask for passwords
(ADR-018). Real `scripts/stack.py run` and `flask` processes."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import uuid
from urllib.parse import urlparse

import psycopg
import pytest
import redis
import requests

from tests.e2e.production_support import METRICS_TOKEN, SECRET_KEY, redis_with_password
from tests.helpers import ROOT
from tests.stack_run import RunningStack, wait_for

pytestmark = pytest.mark.no_db

COMPLETE = {
    "NEXO_ENV": "production",
    "SECRET_KEY": "a-production-secret-key-of-some-length",
    "DATABASE_URL": "postgresql://nexo:s3cret@127.0.0.1:1/nexo",
    "REDIS_URL": "redis://:redis-secret@127.0.0.1:1/0",
    "METRICS_TOKEN": "scraper-token",
}


def start(env: dict, tmp_path, *args: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in COMPLETE and k not in ("METRICS_PORT", "PYTEST_CURRENT_TEST")}
    return subprocess.run(
        [sys.executable, "scripts/stack.py", "run", *args],
        cwd=ROOT,
        env={**base, "NEXO_DATA_DIR": str(tmp_path), "PORT": "1", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("missing", "named"),
    [
        ({"SECRET_KEY": ""}, "SECRET_KEY"),
        ({"DATABASE_URL": ""}, "DATABASE_URL"),
        ({"REDIS_URL": ""}, "REDIS_URL"),
        ({"REDIS_URL": "redis://127.0.0.1:6379/0"}, "REDIS_URL"),  # no password, no TLS
        ({"METRICS_TOKEN": ""}, "METRICS_TOKEN"),
    ],
)
def test_a_production_start_without_a_requirement_is_refused_naming_it(tmp_path, missing, named):
    result = start({**COMPLETE, **missing}, tmp_path)
    assert result.returncode != 0
    said = result.stdout + result.stderr
    assert f"not started: {named}" in said, said
    assert "s3cret" not in said and "redis-secret" not in said  # URLs are never echoed with their password
    assert not (tmp_path / "postgres").exists()  # refused before starting anything: no embedded server


def test_a_process_started_directly_in_production_refuses_too(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"},
        **COMPLETE,
        "REDIS_URL": "redis://127.0.0.1:6379/0",
    }
    result = subprocess.run(
        [sys.executable, "-m", "jobs.worker"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2 and "REDIS_URL" in result.stderr and "no password" in result.stderr


def test_demo_data_is_refused_in_production(tmp_path, settings):
    env = {**{k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}, **COMPLETE}
    env["DATABASE_URL"] = settings.database_url
    result = subprocess.run(
        [sys.executable, "-m", "flask", "--app", "app", "demo", "load", "--if-empty"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0 and "demo data refused: NEXO_ENV=production" in result.stderr, result.stderr


@pytest.fixture(scope="module")
def demo_stack():
    running = RunningStack()
    try:
        running.wait_ready()
        yield running
    finally:
        running.close()


def test_make_run_writes_nothing_others_can_read(demo_stack):
    exposed = []
    for path in demo_stack.data_dir.rglob("*"):
        if path.is_symlink() or path == demo_stack.output or "postgres" in path.relative_to(demo_stack.data_dir).parts[:1]:
            continue  # the test's own capture of the output; the cluster's files (Postgres keeps them 0700/0600)
        mode = path.stat().st_mode
        if path.is_file() and mode & (stat.S_IRWXG | stat.S_IRWXO):
            exposed.append(f"{path} {oct(mode)}")
        if path.is_dir() and mode & (stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH | stat.S_IWOTH):
            exposed.append(f"{path} {oct(mode)}")
    assert exposed == []
    assert stat.S_IMODE((demo_stack.data_dir / "secret_key").stat().st_mode) == 0o600


def test_the_embedded_servers_ask_for_their_passwords(demo_stack):
    no_password = demo_stack.database_url.replace(f":{demo_stack.secret('postgres_password')}@", ":@")
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(no_password, connect_timeout=5).close()
    with psycopg.connect(demo_stack.database_url, connect_timeout=5) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    anonymous = redis.Redis.from_url(demo_stack.redis_url.replace(f":{demo_stack.secret('redis_password')}@", ""))
    with pytest.raises(redis.AuthenticationError):
        anonymous.ping()
    assert redis.Redis.from_url(demo_stack.redis_url).ping()
    assert demo_stack.secret("postgres_password") not in demo_stack.text()  # printed redacted


def test_the_demo_keeps_a_random_secret_key_and_its_logins(demo_stack):
    key = demo_stack.secret("secret_key")
    assert len(key) >= 32 and "not-secret" not in key
    assert "demo logins (password 'nexo-demo')" in demo_stack.text()


@pytest.fixture
def empty_database(settings):
    """A database with nothing in it, on the test run's server; dropped afterwards."""
    name = f"nexo_empty_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlparse(settings.database_url)._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(settings.database_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_production_make_run_on_an_empty_database_loads_no_demo_and_says_how_to_create_the_first_user(empty_database):
    demo_password = "a-demo-password-that-must-not-show"
    with redis_with_password() as redis_url:
        running = RunningStack(
            {
                "NEXO_ENV": "production",
                "SECRET_KEY": SECRET_KEY,
                "DATABASE_URL": empty_database,
                "REDIS_URL": redis_url,
                "METRICS_TOKEN": METRICS_TOKEN,
                "NEXO_DEMO_PASSWORD": demo_password,
                "RELAY_WORKERS": "1",
                "WEB_WORKERS": "1",
            }
        )
        try:

            def printed_url():
                assert running.proc.poll() is None, running.text()[-3000:]
                return re.search(r"Nexo: (http://\S+)", running.text())

            url = wait_for(printed_url, 120, "make run printed its URL").group(1)
            wait_for(lambda: _status(url + "/health") == 200, 60, "/health 200 after start")
            with psycopg.connect(empty_database) as conn:
                users = [r[0] for r in conn.execute("SELECT username FROM app_user").fetchall()]
                products = conn.execute("SELECT count(*) FROM product").fetchone()[0]
            banner = running.text()
        finally:
            running.close()
            shutil.rmtree(running.data_dir, ignore_errors=True)
    assert users == [] and products == 0  # the migrations ran (the tables exist), the demo never loaded
    assert "demo logins" not in banner and demo_password not in banner and "nexo-demo" not in banner
    printed = banner.split("Nexo: ", 1)[1].split("Ctrl-C stops everything", 1)[0]
    assert not {"marta", "laura", "vendedor1"} & set(re.findall(r"\w+", printed)), printed
    assert "flask --app app users create USERNAME --name NAME --role dueno" in banner


def _status(url: str) -> int:
    try:
        return requests.get(url, timeout=3).status_code
    except requests.RequestException:
        return 0
