"""Webhook rules that need no database (ADR-022): which URLs are refused, the signature, and the relay's
refusal to connect a production webhook to an address that is not public (a real connection attempt)."""

from __future__ import annotations

import hashlib
import hmac
import threading
import typing
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from nexo.api.schemas import WebhookEvent
from nexo.outbox import destinations, http_client, webhooks
from nexo.outbox.http_client import HttpClient
from nexo.settings import Settings


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/hooks",  # not https
        "https://127.0.0.1/hooks",
        "https://10.1.2.3/hooks",
        "https://192.168.0.10:8443/hooks",
        "https://169.254.169.254/latest/meta-data",  # a cloud's metadata service
        "https://[::1]/hooks",
        "https://localhost/hooks",
        "https://erp.internal/hooks",
        "https://user:pw@example.com/hooks",
        "gopher://example.com/",
        "https://example.com:0/",
        "https://" + "a" * 2000 + ".com/",
    ],
)
def test_production_refuses_urls_that_are_not_https_to_a_public_host(url):
    assert webhooks.url_problem(url, production=True) is not None


def test_production_accepts_https_to_a_public_name_and_development_accepts_a_local_receiver():
    assert webhooks.url_problem("https://shop.example.com/nexo/hooks?x=1", production=True) is None
    assert webhooks.url_problem("https://93.184.216.34/hooks", production=True) is None
    assert webhooks.url_problem("http://127.0.0.1:8080/hooks", production=False) is None
    assert webhooks.url_problem("ftp://127.0.0.1/hooks", production=False) is not None


def test_the_signature_is_hmac_sha256_over_timestamp_dot_body():
    body = b'{"id":"1","type":"order.confirmed"}'
    header = webhooks.signature("whsec_test", 1700000000, body)
    expected = hmac.new(b"whsec_test", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={expected}"
    assert webhooks.signature("whsec_test", 1700000001, body) != header  # the timestamp is signed too


def test_private_targets_are_allowed_outside_production_only():
    base = {"DATABASE_URL": "postgresql://x@localhost/x", "REDIS_URL": "redis://localhost:6379/0"}
    assert Settings.from_env({**base, "NEXO_ENV": "test"}).webhook_private_targets is True
    assert Settings.from_env({**base, "NEXO_ENV": "test", "WEBHOOK_PRIVATE_TARGETS": "off"}).webhook_private_targets is False


class _Counting(BaseHTTPRequestHandler):
    hits = 0

    def do_POST(self):  # noqa: N802 (http.server's name)
        type(self).hits += 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def local_receiver():
    server = HTTPServer(("127.0.0.1", 0), _Counting)
    _Counting.hits = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hooks"
    server.shutdown()
    server.server_close()


def _notice(url: str, public_only: bool) -> destinations.Outgoing:
    return destinations.Outgoing(
        webhooks.NOTICE, "e1", {"id": "e1"}, target_url=url, secret="whsec_x" * 6, public_only=public_only
    )


def test_a_public_only_notice_to_a_private_address_is_refused_for_good_and_nothing_is_sent(local_receiver):
    client = HttpClient(2.0)
    try:
        settings = Settings.from_env({"NEXO_ENV": "test", "DATABASE_URL": "postgresql://x@h/x", "REDIS_URL": "redis://h:1/0"})
        [refused] = destinations.deliver_all(client, settings, [_notice(local_receiver, public_only=True)])
        assert refused.kind == destinations.PERMANENT and refused.error_class == "PrivateAddress"
        assert _Counting.hits == 0
        # The same receiver is reached when private targets are allowed (development, tests).
        [sent] = destinations.deliver_all(client, settings, [_notice(local_receiver, public_only=False)])
        assert sent.kind == destinations.DELIVERED and _Counting.hits == 1
    finally:
        client.close()


def test_the_address_check_lets_a_public_address_connect(local_receiver, monkeypatch):
    # No public address is reachable from here: treat loopback as public to see the socket libcurl gets
    # from the check is a working one (the path every production notice takes).
    real = http_client.ipaddress.ip_address

    class Loopback:
        def __init__(self, text):
            self._address = real(text)
            self.is_global = self._address.is_global or self._address.is_loopback

    monkeypatch.setattr(http_client.ipaddress, "ip_address", Loopback)
    client = HttpClient(2.0)
    try:
        settings = Settings.from_env({"NEXO_ENV": "test", "DATABASE_URL": "postgresql://x@h/x", "REDIS_URL": "redis://h:1/0"})
        [sent] = destinations.deliver_all(client, settings, [_notice(local_receiver, public_only=True)])
        assert sent.kind == destinations.DELIVERED and _Counting.hits == 1
    finally:
        client.close()


def test_the_api_accepts_exactly_the_events_nexo_sends():
    # The API's schema spells the list as a Literal (for the OpenAPI document); one list, checked here.
    assert typing.get_args(WebhookEvent) == webhooks.EVENTS
