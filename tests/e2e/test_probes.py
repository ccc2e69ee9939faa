"""GET /livez and /readyz (CONTRACT.md, "Several hosts"): Redis down is degraded, Postgres down is not ready."""

from __future__ import annotations

import dataclasses

from nexo import create_app


def test_livez_and_readyz_answer_anonymously(client):
    assert client.get("/livez").get_json() == {"status": "alive"}
    assert client.get("/readyz").get_json() == {"status": "ready", "db": "ok", "redis": "ok"}


def test_redis_down_is_degraded_but_still_ready_while_health_says_503(settings):
    app = create_app(dataclasses.replace(settings, redis_url="redis://127.0.0.1:1/0"), {"TESTING": True})
    try:
        client = app.test_client()
        ready = client.get("/readyz")
        assert ready.status_code == 200
        assert ready.get_json() == {"status": "ready", "db": "ok", "redis": "degraded"}
        assert client.get("/health").status_code == 503
        assert client.get("/livez").status_code == 200
    finally:
        app.extensions["nexo.db"].close()


def test_postgres_down_is_not_ready(settings):
    broken = dataclasses.replace(settings, database_url="postgresql://nobody@127.0.0.1:1/none", db_pool_timeout_s=0.5)
    app = create_app(broken, {"TESTING": True})
    try:
        client = app.test_client()
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.get_json()["db"] == "down"
        assert client.get("/livez").status_code == 200
    finally:
        app.extensions["nexo.db"].close()
