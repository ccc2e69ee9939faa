"""A session ends when it ends (guarantee 22, ADR-018): logout on the server, idle and absolute limits,
"cerrar mis otras sesiones", and every change of access ending the user's sessions at once."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import requests

from tests.e2e.account_support import app_with, is_logged_in, login, post_form
from tests.helpers import ROOT, csrf_token, http_login


def test_a_cookie_copied_before_logout_goes_to_login_afterwards(live_server):
    seller = http_login(live_server, "laura")
    stolen = requests.Session()
    stolen.cookies.update(seller.cookies)  # the copy a shared counter PC keeps
    assert stolen.get(live_server + "/credit/queue", allow_redirects=False, timeout=10).status_code == 200
    token = csrf_token(seller.get(live_server + "/credit/queue", timeout=10).text)
    assert seller.post(live_server + "/logout", data={"csrf_token": token}, allow_redirects=False, timeout=10).status_code == 302
    after = stolen.get(live_server + "/credit/queue", allow_redirects=False, timeout=10)
    assert after.status_code == 302 and after.headers["Location"].startswith("/login")


def test_an_idle_session_ends_and_activity_keeps_it(db):
    app = app_with(session_idle_s=1.5)
    try:
        client = app.test_client()
        assert login(client, "laura").status_code == 302
        for _ in range(4):  # 2 s of activity, never 1.5 s apart
            time.sleep(0.5)
            assert is_logged_in(client)
        time.sleep(1.7)
        response = client.get("/credit/queue")
        assert response.status_code == 302 and response.headers["Location"].startswith("/login")
        with db.reading() as conn:
            assert conn.execute("SELECT end_reason FROM user_session").fetchone()["end_reason"] == "idle"
    finally:
        app.extensions["nexo.db"].close()


def test_a_session_ends_at_its_absolute_limit_however_active(db):
    app = app_with(session_max_s=2.0)
    try:
        client = app.test_client()
        assert login(client, "laura").status_code == 302
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            assert is_logged_in(client)
            time.sleep(0.3)
        time.sleep(0.8)
        assert client.get("/credit/queue").status_code == 302
        with db.reading() as conn:
            assert conn.execute("SELECT end_reason FROM user_session").fetchone()["end_reason"] == "expired"
    finally:
        app.extensions["nexo.db"].close()


def test_close_my_other_sessions_ends_them_and_keeps_this_one(app):
    phone, office = app.test_client(), app.test_client()
    login(phone, "laura")
    login(office, "laura")
    assert post_form(office, "/account", "/account/sessions/close-others").status_code == 303
    assert is_logged_in(office) and not is_logged_in(phone)


@pytest.mark.parametrize(
    ("action", "data"),
    [("deactivate", {}), ("reset-password", {}), ("roles", {"roles": ["ventas"]})],
)
def test_deactivation_reset_and_role_change_end_the_users_sessions_at_once(app, action, data):
    laura, marta = app.test_client(), app.test_client()
    login(laura, "laura")
    assert is_logged_in(laura)
    login(marta, "marta")
    assert post_form(marta, "/admin/users", f"/admin/users/laura/{action}", data).status_code == 303
    response = laura.get("/credit/queue")
    assert response.status_code == 302 and response.headers["Location"].startswith("/login")


def test_reactivating_a_user_revives_none_of_their_sessions(app):
    laura, marta = app.test_client(), app.test_client()
    login(laura, "laura")
    login(marta, "marta")
    post_form(marta, "/admin/users", "/admin/users/laura/deactivate")
    post_form(marta, "/admin/users", "/admin/users/laura/activate")
    assert not is_logged_in(laura)
    assert login(app.test_client(), "laura").status_code == 302  # a new login works


def test_a_cookie_without_a_server_session_opens_nothing(app, client):
    # A cookie signed with the right key but naming no session (the old cookie-only sessions).
    with client.session_transaction() as session:
        session["_user_id"] = "5"
        session["_fresh"] = True
    assert client.get("/ops").status_code == 302


def test_logged_in_pages_and_the_api_are_not_stored_by_caches(client):
    static = client.get("/static/nexo.css")
    static.close()
    assert "no-store" not in static.headers.get("Cache-Control", "")
    login(client, "laura")
    assert client.get("/credit/queue").headers["Cache-Control"] == "no-store"
    assert client.get("/account").headers["Cache-Control"] == "no-store"
    assert client.get("/api/v1/orders").headers["Cache-Control"] == "no-store"  # 401 problem+json, still no-store


def test_the_retention_job_purges_sessions_long_ended_and_keeps_the_rest(db, app):
    login(app.test_client(), "laura")  # live
    login(app.test_client(), "sergio")
    with db.transaction() as tx:
        sergio = tx.execute("SELECT id FROM app_user WHERE username = 'sergio'").fetchone()["id"]
        tx.execute(
            "UPDATE user_session SET ended_at = now() - interval '31 days', end_reason = 'logout',"
            " created_at = now() - interval '32 days', last_seen_at = now() - interval '31 days' WHERE user_id = %s",
            [sergio],
        )
        tx.execute(  # never logged out, idle for 31 days
            "INSERT INTO user_session (token_sha256, user_id, created_at, last_seen_at, client_addr, user_agent)"
            " VALUES (repeat('a', 64), %s, now() - interval '40 days', now() - interval '40 days', '127.0.0.1', 'x')",
            [sergio],
        )
        tx.commit()
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    result = subprocess.run(
        [sys.executable, "-m", "jobs.retention"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "table=user_session deleted=2" in result.stderr
    with db.reading() as conn:
        users = [r["username"] for r in conn.execute("SELECT u.username FROM user_session s JOIN app_user u ON u.id = s.user_id")]
    assert users == ["laura"]
