"""Structured logs: a request id on every web line (gunicorn's too) and on the RQ job lines a request
caused; never a password, a token or a cookie."""

from __future__ import annotations

import json
import logging
import secrets

import requests

from nexo.observability import JsonFormatter, redact, request_id_scope, request_id_var
from tests.e2e.order_forms import form_data
from tests.helpers import DEMO_PASSWORD, csrf_token
from tests.ops_helpers import gunicorn, login_client, post_login
from tests.relay_fixtures import event_rows, wait_until

WRONG_PASSWORD = "Zq9-wrong-" + secrets.token_hex(4)


def _formatted(records) -> str:
    formatter = JsonFormatter()
    return "\n".join(formatter.format(record) for record in records)


def test_logging_in_logs_neither_the_password_nor_the_session_cookie(client, caplog):
    caplog.set_level(logging.DEBUG)
    token = csrf_token(client.get("/login").get_data(as_text=True))
    refused = client.post("/login", data={"username": "laura", "password": WRONG_PASSWORD, "csrf_token": token})
    assert refused.status_code == 401
    accepted = client.post("/login", data={"username": "laura", "password": DEMO_PASSWORD, "csrf_token": token})
    assert accepted.status_code == 302
    cookie = next(c for c in accepted.headers.getlist("Set-Cookie") if c.startswith("session="))
    cookie_value = cookie.split(";", 1)[0].split("=", 1)[1]
    client.get("/", headers={"Cookie": f"session={cookie_value}"})
    logs = _formatted(caplog.records)
    assert "login refused" in logs and "logged in" in logs  # the lines exist, without secrets
    for secret in (WRONG_PASSWORD, DEMO_PASSWORD, cookie_value, token):
        assert secret not in logs


def test_lines_logged_during_a_request_carry_its_request_id(client, caplog):
    caplog.set_level(logging.INFO)
    response = client.post("/login", data={"username": "laura", "password": "x"}, headers={"X-Request-ID": "probe-web-1"})
    assert response.headers["X-Request-ID"] == "probe-web-1"
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records if r.name.startswith("nexo")]
    assert lines and all(line["request_id"] == "probe-web-1" for line in lines)
    assert request_id_var.get() == "-"  # unbound when the request ended


def test_a_job_binds_the_request_id_for_its_lines_and_restores_the_previous_one(caplog):
    caplog.set_level(logging.INFO)
    with request_id_scope("req-from-web"):
        logging.getLogger("jobs.test").info("delivering")
    logging.getLogger("jobs.test").info("idle")
    ids = [json.loads(JsonFormatter().format(r))["request_id"] for r in caplog.records if r.name == "jobs.test"]
    assert ids == ["req-from-web", "-"]


def test_credentials_that_slip_into_a_message_are_masked():
    assert redact("Authorization: Bearer abc.def") == "Authorization: ***"
    assert redact("retry with token=s3cr3t&x=1") == "retry with token=***&x=1"
    assert redact('{"password": "hunter2"}') == '{"password": "***"}'
    assert redact("claim_token=7f3e event 12") == "claim_token=7f3e event 12"  # not a credential


def test_gunicorn_writes_json_lines_with_request_ids_and_no_secrets(tmp_path):
    log_path = tmp_path / "web.log"
    metrics_token = "scrape-" + secrets.token_hex(8)
    with gunicorn(log_path, METRICS_TOKEN=metrics_token) as base:
        assert post_login(base, "laura", WRONG_PASSWORD).status_code == 401
        session = requests.Session()
        accepted = post_login(base, "laura", DEMO_PASSWORD, session=session)
        assert accepted.status_code == 302
        cookie_value = session.cookies["session"]
        page = session.get(base + "/", headers={"X-Request-ID": "probe-gunicorn-1"}, allow_redirects=False, timeout=10)
        scraped = requests.get(base + "/metrics", headers={"Authorization": f"Bearer {metrics_token}"}, timeout=10)
        assert scraped.status_code == 200
    text = log_path.read_text(encoding="utf-8")
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]  # every line is JSON
    assert lines and all("request_id" in line for line in lines)
    access = [line for line in lines if line["logger"] == "gunicorn.access"]
    by_id = {line["request_id"]: line for line in access}
    assert by_id["probe-gunicorn-1"]["path"] == "/" and page.headers["X-Request-ID"] == "probe-gunicorn-1"
    assert by_id[scraped.headers["X-Request-ID"]]["path"] == "/metrics"
    assert by_id[accepted.headers["X-Request-ID"]]["status"] == 302
    app_lines = [line for line in lines if line["logger"].startswith("nexo.auth")]
    assert app_lines and all(line["request_id"] in by_id for line in app_lines)
    for secret in (WRONG_PASSWORD, DEMO_PASSWORD, cookie_value, metrics_token):
        assert secret not in text


def test_the_relay_job_lines_carry_the_request_id_of_the_order_that_caused_them(app, db, fakes, relay):
    (worker,) = relay.start_workers(1)
    seller = login_client(app, "vendedor1")
    html = seller.get("/orders/new").get_data(as_text=True)
    response = seller.post(
        "/orders/new", data=form_data(html, "Corralón del Sur", [("TOR-010", 1)]), headers={"X-Request-ID": "probe-order-1"}
    )
    assert response.status_code == 303
    with db.reading() as conn:
        ids = [r["id"] for r in conn.execute("SELECT id FROM outbox_event").fetchall()]
    wait_until(
        lambda: all(r["status"] == "ENTREGADO" for r in event_rows(db, ids).values()),
        message="the worker did not deliver the order's events",
    )

    def delivered_lines() -> list[dict]:
        lines = relay.log(worker).splitlines()
        relay_lines = [
            json.loads(line) for line in lines if line.startswith("{") and line.endswith("}") and '"nexo.outbox.relay"' in line
        ]
        return [line for line in relay_lines if "ENTREGADO" in line["msg"]]

    # The relay logs an outcome after its transaction commits, so the row can read ENTREGADO a moment
    # before the line reaches the log: wait for the lines, not only for the rows.
    wait_until(lambda: len(delivered_lines()) >= 2, message="the worker did not log both deliveries")
    delivered = delivered_lines()
    assert len(delivered) == 2 and {line["request_id"] for line in delivered} == {"probe-order-1"}
