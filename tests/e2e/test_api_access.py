"""Who may use the Orders API: bearer keys only, revocation, permissions, visibility, rate limit, outages."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import uuid

from nexo import create_app
from nexo.settings import SecuritySettings, Settings
from nexo.telemetry.recorder import recorder
from tests.e2e.api_support import Api, assert_documented, new_key, order_body
from tests.helpers import ROOT, csrf_token, http_login
from tests.integration.order_helpers import count


def flask_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flask", "--app", "app", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NEXO_ENV": "test"},
        check=False,
    )


def test_cli_key_is_printed_once_works_and_once_revoked_is_401_and_both_are_audited(live_server, db):
    created = flask_cli("apikeys", "create", "tienda-web", "--user", "vendedor1")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    assert key.startswith("nexo_") and " " not in key
    api = Api(live_server, key)
    assert api.call("get", "/api/v1/catalog").status_code == 200
    with db.reading() as conn:
        stored = conn.execute("SELECT key_sha256, last_used_at FROM api_key WHERE name = 'tienda-web'").fetchone()
    assert key not in stored["key_sha256"] and stored["last_used_at"] is not None
    revoked = flask_cli("apikeys", "revoke", "tienda-web")
    assert revoked.returncode == 0, revoked.stderr
    refused = api.call("get", "/api/v1/catalog")
    assert refused.status_code == 401 and refused.json()["reason"] == "unauthorized"
    assert api.post_order(order_body(db, [("COR-200", 1)]), uuid.uuid4()).status_code == 401
    assert count(db, "SELECT count(*) FROM audit_log WHERE action IN ('api_key.created', 'api_key.revoked')") == 2
    page = http_login(live_server, "marta").get(live_server + "/admin/api-keys", timeout=10).text
    assert 'data-api-key="tienda-web" data-api-key-status="revoked"' in page and key not in page
    assert stored["key_sha256"] not in page


def test_a_session_cookie_alone_is_401_on_every_api_route(live_server, db):
    session = http_login(live_server, "vendedor1")
    token = csrf_token(session.get(live_server + "/orders/new", timeout=10).text)
    for method, path, kwargs in (
        ("get", "/api/v1/orders", {}),
        ("get", "/api/v1/catalog", {}),
        (
            "post",
            "/api/v1/orders",
            {"json": order_body(db, [("COR-200", 1)]), "headers": {"Idempotency-Key": str(uuid.uuid4()), "X-CSRFToken": token}},
        ),
    ):
        response = session.request(method.upper(), live_server + path, timeout=10, **kwargs)
        assert response.status_code == 401, (path, response.status_code)
        assert response.headers["Content-Type"] == "application/problem+json"
    assert count(db, "SELECT count(*) FROM orders") == 0


def test_an_unknown_or_missing_key_is_401(live_server):
    for api in (Api(live_server, None), Api(live_server, "nexo_" + "x" * 43), Api(live_server, "garbage")):
        response = api.call("get", "/api/v1/orders")
        assert response.status_code == 401 and response.headers["WWW-Authenticate"].startswith("Bearer")


def test_a_key_whose_user_lacks_orders_create_is_403(live_server, db):
    api = Api(live_server, new_key(db, "laura"))
    response = api.post_order(order_body(db, [("COR-200", 1)]), uuid.uuid4())
    assert response.status_code == 403 and response.json()["reason"] == "forbidden"
    assert api.call("get", "/api/v1/catalog").status_code == 403
    assert count(db, "SELECT count(*) FROM orders") == 0


def test_another_salespersons_order_is_404_and_credit_may_read_it(live_server, db):
    mine = Api(live_server, new_key(db, "vendedor1")).post_order(order_body(db, [("COR-200", 1)]), uuid.uuid4())
    path = f"/api/v1/orders/{mine.json()['id']}"
    other = Api(live_server, new_key(db, "vendedor2")).call("get", path)
    assert other.status_code == 404 and other.json()["reason"] == "not_found"
    assert Api(live_server, new_key(db, "vendedor2")).call("get", f"/api/v1/orders/{uuid.uuid4()}").status_code == 404
    credit = Api(live_server, new_key(db, "laura")).call("get", path)
    assert credit.status_code == 200 and credit.json() == mine.json()


def test_the_rate_limit_per_key_answers_429_problem_with_retry_after(db):
    settings = dataclasses.replace(Settings.from_env(), security=SecuritySettings(api_limit_per_key="3 per minute"))
    app = create_app(settings, test_config={"TESTING": True})
    client, key, other = app.test_client(), new_key(db), new_key(db)
    doc = client.get("/api/v1/openapi.json").get_json()
    statuses = [client.get("/api/v1/catalog", headers={"Authorization": f"Bearer {key}"}).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = client.get("/api/v1/catalog", headers={"Authorization": f"Bearer {key}"})
    assert limited.content_type == "application/problem+json" and limited.json["reason"] == "rate_limited"
    assert int(limited.headers["Retry-After"]) >= 1
    assert_documented(doc, "get", "/api/v1/catalog", limited)
    assert client.get("/api/v1/catalog", headers={"Authorization": f"Bearer {other}"}).status_code == 200
    app.extensions["nexo.db"].close()


def test_with_the_database_down_the_api_answers_503_problem_json(settings):
    down = dataclasses.replace(settings, database_url="postgresql://postgres@127.0.0.1:1/nowhere", db_pool_timeout_s=0.5)
    app = create_app(down, test_config={"TESTING": True})
    recorder.configure(settings.database_url)  # create_app pointed this process's ops recorder at it
    response = app.test_client().get("/api/v1/orders", headers={"Authorization": "Bearer nexo_" + "y" * 43})
    assert response.status_code == 503 and response.content_type == "application/problem+json"
    assert response.json["reason"] == "unavailable" and response.headers["Retry-After"]
    app.extensions["nexo.db"].close()
