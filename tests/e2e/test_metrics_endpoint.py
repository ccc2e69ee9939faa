"""GET /metrics: Prometheus text, nexo_ names, counts only, METRICS_TOKEN, multiprocess under gunicorn."""

from __future__ import annotations

import dataclasses
import logging
import secrets

import pytest
import requests

from nexo import create_app
from nexo.telemetry import metrics
from tests.ops_helpers import make_event, make_order, prometheus_values


@pytest.fixture
def token_app(settings):
    app = create_app(dataclasses.replace(settings, metrics_token="scrape-" + secrets.token_hex(8)), test_config={"TESTING": True})
    yield app
    app.extensions["nexo.db"].close()


def test_metrics_needs_no_login_and_speaks_prometheus_text(client):
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    assert "Set-Cookie" not in response.headers
    samples = [line for line in response.get_data(as_text=True).splitlines() if line and not line.startswith("#")]
    assert samples and all(line.startswith("nexo_") for line in samples)


def test_metrics_holds_counts_and_no_business_data(db, client):
    make_event(
        db,
        make_order(db, client="Obras Rápidas SRL"),
        destination="fiscal",
        last_error="cliente Obras Rápidas SRL, CUIT 30-12345678-9, COR-118",
    )
    body = client.get("/metrics").get_data(as_text=True)
    assert prometheus_values(body)[("nexo_outbox_pending_events", 'destination="fiscal"')] == 1
    for secret in ("Obras Rápidas", "CUIT", "COR-118", "vendedor1", "marta"):
        assert secret not in body


def test_metrics_token_is_required_when_set(token_app, caplog):
    caplog.set_level(logging.DEBUG)
    token = token_app.config["NEXO_SETTINGS"].metrics_token
    client = token_app.test_client()
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/metrics", headers={"Authorization": token}).status_code == 401  # scheme required
    refused = client.get("/metrics", headers={"Authorization": f"Bearer {token}x"})
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")
    assert "nexo_" not in refused.get_data(as_text=True)
    accepted = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert accepted.status_code == 200 and "nexo_signals_up 1.0" in accepted.get_data(as_text=True)
    assert not any(token in record.getMessage() for record in caplog.records)


def test_metrics_answers_when_the_database_cannot_be_read(client, monkeypatch):
    from nexo.ops import service

    def broken(_db):
        raise RuntimeError("database unreachable")

    monkeypatch.setattr(service, "read_current", broken)
    response = client.get("/metrics")
    assert response.status_code == 200 and "nexo_signals_up 0.0" in response.get_data(as_text=True)


def test_every_gunicorn_worker_reports_what_every_process_observed(live_server, settings):
    # The hooks write to PROMETHEUS_MULTIPROC_DIR, shared by this test process and the gunicorn workers
    # (`make test` sets it). A value observed here must be in whatever worker answers the scrape.
    assert settings.prometheus_multiproc_dir, "make test must set PROMETHEUS_MULTIPROC_DIR"
    label = "probe_" + secrets.token_hex(4)
    metrics.observe_order_transaction(0.042, label)
    metrics.observe_order_transaction(0.084, label)
    answers = set()
    for _ in range(8):  # two workers: several scrapes reach both
        values = prometheus_values(requests.get(live_server + "/metrics", timeout=10).text)
        answers.add(
            (
                values[("nexo_order_transaction_seconds_count", f'outcome="{label}"')],
                round(values[("nexo_order_transaction_seconds_sum", f'outcome="{label}"')], 6),
            )
        )
    assert answers == {(2.0, 0.126)}
