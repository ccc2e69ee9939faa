"""What production should have and Nexo cannot enforce (a TLS proxy and COOKIE_SECURE=always,
TRUSTED_PROXIES, not running as root) is logged once by each production program as it starts: under
supervisor or systemd gunicorn and the jobs are started directly, where make run's banner is not (README,
Running it safely). Real processes with a production environment; every test starts from the Nexo
morning, so a sweeper or worker started here finds nothing of an earlier test's to deliver."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.e2e.production_support import ROOT, production_env, redis_with_password
from tests.helpers import running_gunicorn
from tests.stack_run import wait_for

MISSING_PROXY_SETTINGS = ("TRUSTED_PROXIES is 0", "COOKIE_SECURE is not 'always'")
AS_ROOT = "running as root"


@pytest.fixture(scope="module")
def redis_url():
    with redis_with_password() as url:
        yield url


def start_up_warnings(output: str) -> list[str]:
    return [line for line in output.splitlines() if "start-up warning" in line]


def assert_warned_once_each(output: str) -> None:
    said = start_up_warnings(output)
    for warning in MISSING_PROXY_SETTINGS:
        assert sum(warning in line for line in said) == 1, said
    assert sum(AS_ROOT in line for line in said) == (1 if os.geteuid() == 0 else 0), said


def test_a_production_gunicorn_says_the_warnings_once_in_its_master(tmp_path, settings, redis_url):
    log = tmp_path / "gunicorn.log"
    with running_gunicorn(production_env(settings.database_url, redis_url, WEB_WORKERS="2", WEB_THREADS="2"), log):
        pass  # /health answered: the master and both workers have started
    assert_warned_once_each(log.read_text())  # once: the master's, not one per worker


def test_a_production_gunicorn_with_the_proxy_settings_warns_of_neither(tmp_path, settings, redis_url):
    log = tmp_path / "gunicorn.log"
    env = production_env(settings.database_url, redis_url, WEB_WORKERS="1", TRUSTED_PROXIES="1", COOKIE_SECURE="always")
    with running_gunicorn(env, log):
        pass
    said = start_up_warnings(log.read_text())
    assert not [line for line in said if any(w in line for w in MISSING_PROXY_SETTINGS)], said


@pytest.mark.parametrize(
    ("program", "started"),
    [
        (["jobs.worker"], "relay worker (simple) on queue"),
        (["jobs.sweeper"], ": every "),
        (["jobs.retention"], None),  # one pass, then it exits
    ],
    ids=["worker", "sweeper", "retention"],
)
def test_each_production_job_says_the_warnings_once_as_it_starts(tmp_path, settings, redis_url, program, started):
    output = tmp_path / "job.log"
    with open(output, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", *program],
            cwd=ROOT,
            env=production_env(settings.database_url, redis_url),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        if started is None:
            assert proc.wait(timeout=60) in (0, 1), output.read_text()
        else:
            # The line the program logs once it runs, after its start-up warnings: all of them are in by then.
            wait_for(lambda: proc.poll() is None and started in output.read_text(), 60, f"{program[0]} started")
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    assert_warned_once_each(output.read_text())
