"""GET /health and the 503 page when Postgres is down."""

import os

from nexo import create_app
from tests.helpers import csrf_token, free_port


def test_health_reports_ok(client):
    response = client.get("/health")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok", "db": "ok", "redis": "ok"}


def _app_with(**env):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return create_app(test_config={"TESTING": True})
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_health_names_the_database_when_it_is_down():
    port = free_port()
    app = _app_with(DATABASE_URL=f"postgresql://postgres@127.0.0.1:{port}/nexo", DB_POOL_TIMEOUT_S="1")
    response = app.test_client().get("/health")
    assert response.status_code == 503
    assert response.get_json()["db"] == "down"
    app.extensions["nexo.db"].close()


def test_health_names_redis_when_it_is_down():
    app = _app_with(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    response = app.test_client().get("/health")
    assert response.status_code == 503
    assert response.get_json() == {"status": "down", "db": "ok", "redis": "down"}
    app.extensions["nexo.db"].close()


def test_database_down_shows_a_clear_503_page_not_a_traceback():
    port = free_port()
    app = _app_with(DATABASE_URL=f"postgresql://postgres@127.0.0.1:{port}/nexo", DB_POOL_TIMEOUT_S="1")
    client = app.test_client()
    token = csrf_token(client.get("/login").get_data(as_text=True))
    response = client.post("/login", data={"username": "laura", "password": "x", "csrf_token": token})
    body = response.get_data(as_text=True)
    assert response.status_code == 503
    assert "La base de datos no responde" in body and "Traceback" not in body
    app.extensions["nexo.db"].close()
