"""Broken connections and a database that does not answer cost a clean error, never a 500 (guarantee 17).

A restart is played here on the machine's shared server without restarting it: pg_terminate_backend
sends our own connection exactly what a `pg_ctl restart -m fast` sends every connection
(AdminShutdown). tests/e2e/test_database_restart.py does the real restart under gunicorn.
"""

from __future__ import annotations

import dataclasses
import os
import uuid

import psycopg
import psycopg.conninfo
import pytest
from psycopg_pool import ConnectionPool

from nexo import create_app
from nexo.db import Database
from nexo.settings import Settings
from nexo.telemetry.recorder import recorder
from tests.e2e.order_forms import resubmitted_form
from tests.helpers import csrf_token, free_port


def _terminate(settings, pid: int) -> None:
    with psycopg.connect(settings.database_url, autocommit=True) as admin:
        # The timeout makes the call wait until the backend is gone, as after a restart.
        admin.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])


def test_a_pooled_connection_broken_by_a_restart_is_replaced_before_use(settings):
    database = Database(settings.database_url, max_size=1, name="outage-test")
    try:
        with database.reading() as conn:
            first = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
        _terminate(settings, first)  # the connection dies while idle in the pool
        with database.reading() as conn:
            second = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
        assert second != first
    finally:
        database.close()


def test_a_healthy_pooled_connection_is_lent_without_a_round_trip_and_a_broken_one_is_checked(settings, monkeypatch):
    checked = []
    full_check = ConnectionPool.check_connection
    monkeypatch.setattr(
        ConnectionPool, "check_connection", staticmethod(lambda conn: (checked.append(conn.info.backend_pid), full_check(conn)))
    )
    database = Database(settings.database_url, max_size=1, name="outage-test")
    try:
        for _ in range(5):
            with database.reading() as conn:
                pid = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
        assert checked == [], "an idle, healthy connection was checked with a round trip"
        _terminate(settings, pid)
        with database.reading() as conn:
            assert conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"] != pid
        assert checked == [pid], "the broken connection was lent without the full check"
    finally:
        database.close()


def test_a_connection_lost_inside_a_transaction_raises_that_error_not_the_rollbacks(settings):
    database = Database(settings.database_url, max_size=1, name="outage-test")
    try:
        with pytest.raises(psycopg.errors.AdminShutdown), database.transaction() as tx:
            _terminate(settings, tx.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"])
            tx.execute("SELECT 1")
        with database.reading() as conn:  # and the pool goes on with a new connection
            assert conn.execute("SELECT 1 AS one").fetchone()["one"] == 1
    finally:
        database.close()


@pytest.fixture
def app_without_database(settings):
    """The app pointed at a port where no database listens (a stopped Postgres), failing fast."""
    down = Settings.from_env(
        {**os.environ, "DATABASE_URL": f"postgresql://postgres@127.0.0.1:{free_port()}/nexo", "DB_POOL_TIMEOUT_S": "1"}
    )
    application = create_app(down, test_config={"TESTING": True, "PROPAGATE_EXCEPTIONS": False})
    yield application
    application.extensions["nexo.db"].close()
    recorder.configure(settings.database_url)  # create_app pointed this process's ops recorder at it


def _logged_in(app):
    """A client whose session says a salesperson (and her CSRF token) is logged in, as before the outage."""
    client = app.test_client()
    token = csrf_token(client.get("/login").get_data(as_text=True))  # the login form needs no database
    with client.session_transaction() as session:
        session["_user_id"] = "1"
        session["_fresh"] = True
        session["sid"] = "a-session-id"  # the server-side session (ADR-018): checking it needs the database
    return client, token


def test_a_logged_in_page_during_an_outage_is_the_503_page(app_without_database):
    client, _ = _logged_in(app_without_database)
    response = client.get("/orders/new")
    body = response.get_data(as_text=True)
    assert response.status_code == 503, body
    assert "La base de datos no responde" in body and "No se guardó nada" not in body


def test_the_order_form_posted_during_an_outage_says_the_same_form_can_be_confirmed_again(app_without_database):
    client, token = _logged_in(app_without_database)
    form = {
        "csrf_token": token,
        "request_id": str(uuid.uuid4()),
        "client_id": str(uuid.uuid4()),
        "deposit_id": "CEN",
        "lines-0-sku": "COR-200",
        "lines-0-quantity": "2",
        "delivery_method": 'a "b" <c>',
    }
    response = client.post("/orders/new", data=form)
    body = response.get_data(as_text=True)
    assert response.status_code == 503, body
    assert "confirmá el mismo formulario otra vez" in body and "nunca uno duplicado" in body
    assert "No se guardó nada" not in body
    assert resubmitted_form(body) == form  # the button sends the same form, the same requestId


# A server that answers but refuses writes: what PgBouncer reaches when a failover rewires it to the
# standby a moment before its promotion ends (ADR-019). default_transaction_read_only plays it here.
def _read_only(url: str) -> str:
    return psycopg.conninfo.make_conninfo(url, options="-c default_transaction_read_only=on")


def test_a_connection_whose_server_refuses_writes_is_not_lent_again(settings):
    database = Database(_read_only(settings.database_url), max_size=1, name="outage-test")
    try:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction), database.transaction() as tx:
            first = tx.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
            tx.execute("CREATE TABLE never_made (x int)")
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction), database.reading_one() as conn:
            second = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
            conn.execute("CREATE TABLE never_made (x int)")
        with database.reading() as conn:  # a new connection each time: a direct pool finds the new leader so
            third = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
        assert len({first, second, third}) == 3
    finally:
        database.close()


@pytest.fixture
def app_on_a_read_only_server(settings):
    read_only = dataclasses.replace(settings, database_url=_read_only(settings.database_url))
    application = create_app(read_only, test_config={"TESTING": True, "PROPAGATE_EXCEPTIONS": False})
    yield application
    application.extensions["nexo.db"].close()
    recorder.configure(settings.database_url)


def test_a_server_that_refuses_writes_is_the_503_page_and_not_ready(app_on_a_read_only_server):
    client, token = _logged_in(app_on_a_read_only_server)
    page = client.get("/orders/new")  # the session's touch is a write
    assert page.status_code == 503 and "La base de datos no responde" in page.get_data(as_text=True)
    form = {"csrf_token": token, "request_id": str(uuid.uuid4()), "client_id": str(uuid.uuid4()), "deposit_id": "CEN"}
    posted = client.post("/orders/new", data=form)
    assert posted.status_code == 503 and resubmitted_form(posted.get_data(as_text=True)) == form
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.get_json()["db"] == "read_only"
    assert client.get("/livez").status_code == 200
