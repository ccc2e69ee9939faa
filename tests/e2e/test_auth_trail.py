"""The authentication trail (ADR-018): audit rows with the client's address and user agent, the owner's
page with filters, /metrics counters, and the per-username limit taken before the password check."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pyotp
import pytest
import requests

from nexo.auth import service
from tests.e2e.account_support import login, post_form
from tests.e2e.test_second_factor import enrol
from tests.helpers import DEMO_PASSWORD, csrf_token, running_gunicorn

BROWSER = {"User-Agent": "NexoTest/1.0 (counter PC)"}


def trail(db) -> list[dict]:
    with db.reading() as conn:
        return conn.execute(
            "SELECT actor, action, object_id, details FROM audit_log"
            " WHERE action LIKE 'auth.%%' OR action LIKE 'api_key.%%' ORDER BY id"
        ).fetchall()


def test_logins_failures_lockouts_logouts_and_changes_leave_trail_rows(app, db):
    client = app.test_client()
    for _ in range(5):
        assert login(client, "laura", "wrong-password", headers=BROWSER).status_code == 401
    assert login(client, "laura", headers=BROWSER).status_code == 429
    sergio = app.test_client()
    assert login(sergio, "sergio", headers=BROWSER).status_code == 302
    post_form(sergio, "/account", "/account/sessions/close-others")
    post_form(
        sergio,
        "/account/password",
        "/account/password",
        {
            "current_password": DEMO_PASSWORD,
            "new_password": "una frase bastante larga",
            "new_password_confirm": "una frase bastante larga",
        },
    )
    enrol(sergio)
    post_form(sergio, "/account", "/logout")
    rows = trail(db)
    actions = [r["action"] for r in rows]
    assert actions.count("auth.login_failed") == 5 and actions.count("auth.locked_out") == 1
    for action in ("auth.login", "auth.session_revoked", "auth.password_changed", "auth.mfa_enrolled", "auth.logout"):
        assert action in actions, action
    for row in rows:
        assert row["details"]["client_addr"] == "127.0.0.1" and row["details"]["user_agent"], row
        if row["action"] in ("auth.login", "auth.login_failed", "auth.locked_out"):
            assert row["details"]["user_agent"].startswith("NexoTest/1.0"), row
    assert {r["actor"] for r in rows if r["action"] == "auth.login_failed"} == {"laura"}


def _login_through(base: str, username: str, password: str, headers: dict) -> int:
    session = requests.Session()
    token = csrf_token(session.get(base + "/login", headers=headers, timeout=10).text)
    data = {"username": username, "password": password, "csrf_token": token}
    return session.post(base + "/login", data=data, headers=headers, allow_redirects=False, timeout=10).status_code


@pytest.mark.parametrize(
    ("trusted_proxies", "recorded"),
    [("1", "203.0.113.7"), ("0", "127.0.0.1")],
    ids=["behind-one-trusted-proxy", "no-proxy-trusted"],
)
def test_the_trail_records_the_forwarded_client_only_behind_a_trusted_proxy(db, trusted_proxies, recorded):
    # What one proxy in front sends on: whatever the client claimed first, then the address it saw. Trusting
    # one hop (ProxyFix) takes the proxy's word only; with none trusted the header is anyone's, and the
    # trail keeps the socket's peer (gunicorn's, here 127.0.0.1).
    forwarded = {**BROWSER, "X-Forwarded-For": "198.51.100.1, 203.0.113.7"}
    with running_gunicorn({"TRUSTED_PROXIES": trusted_proxies, "WEB_WORKERS": "1", "WEB_THREADS": "2"}) as base:
        assert _login_through(base, "laura", "wrong-password", forwarded) == 401
        assert _login_through(base, "laura", DEMO_PASSWORD, forwarded) == 302
    rows = [r for r in trail(db) if r["action"] in ("auth.login_failed", "auth.login")]
    assert [r["action"] for r in rows] == ["auth.login_failed", "auth.login"]
    assert [r["details"]["client_addr"] for r in rows] == [recorded, recorded]
    with db.reading() as conn:
        sessions = conn.execute("SELECT client_addr FROM user_session").fetchall()
    assert [r["client_addr"] for r in sessions] == [recorded]


def test_the_owner_reads_the_trail_with_filters(app):
    login(app.test_client(), "laura", "wrong-password", headers=BROWSER)
    login(app.test_client(), "sergio", headers=BROWSER)
    marta = app.test_client()
    login(marta, "marta")
    page = marta.get("/admin/auth-events?action=auth.login_failed").get_data(as_text=True)
    assert re.findall(r'data-auth-event="([^"]+)"', page) == ["auth.login_failed"]
    only_sergio = marta.get("/admin/auth-events?user=sergio").get_data(as_text=True)
    assert set(re.findall(r'data-actor="([^"]+)"', only_sergio)) == {"sergio"}
    laura = app.test_client()
    login(laura, "laura")
    assert laura.get("/admin/auth-events").status_code == 403


def _counter(text: str, name: str) -> float:
    match = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def test_metrics_count_failures_lockouts_and_the_attempts_refused_after_a_lockout(client, app):
    before = client.get("/metrics").get_data(as_text=True)
    for _ in range(5):
        login(app.test_client(), "vendedor2", "wrong-password")
    # Locked out: these are answered 429 before any check, right password or not.
    assert login(app.test_client(), "vendedor2", "wrong-password").status_code == 429
    assert login(app.test_client(), "vendedor2").status_code == 429
    after = client.get("/metrics").get_data(as_text=True)

    def grew(name: str) -> float:
        return _counter(after, name) - _counter(before, name)

    assert grew("nexo_login_failures_total") == 5  # the refused ones never reached the check
    assert grew("nexo_login_lockouts_total") == 1
    assert grew("nexo_login_locked_refusals_total") == 2


def test_twenty_parallel_wrong_passwords_reach_the_check_at_most_five_times(live_server, db):
    def attempt(_):
        session = requests.Session()
        token = csrf_token(session.get(live_server + "/login", timeout=10).text)
        return session.post(
            live_server + "/login",
            data={"username": "vendedor1", "password": "wrong-password", "csrf_token": token},
            allow_redirects=False,
            timeout=30,
        ).status_code

    with ThreadPoolExecutor(20) as pool:
        statuses = list(pool.map(attempt, range(20)))
    assert statuses.count(401) == 5 and statuses.count(429) == 15, statuses
    checked = [r for r in trail(db) if r["action"] == "auth.login_failed"]
    assert len(checked) == 5  # only those that reached the password check left a row


def test_twenty_parallel_wrong_passwords_in_one_process_run_the_password_check_five_times(app, monkeypatch):
    # The check itself counted: attempts that were refused after comparing a password would not show
    # in the statuses or the trail, only here.
    checks, lock = [], threading.Lock()
    real_check = service.check_password_hash

    def counted(stored, typed):
        with lock:
            checks.append(typed)
        return real_check(stored, typed)

    monkeypatch.setattr(service, "check_password_hash", counted)
    start = threading.Barrier(20)

    def attempt(_):
        client = app.test_client()
        token = csrf_token(client.get("/login").get_data(as_text=True))
        start.wait()
        return client.post("/login", data={"username": "vendedor1", "password": "wrong", "csrf_token": token}).status_code

    with ThreadPoolExecutor(20) as pool:
        statuses = list(pool.map(attempt, range(20)))
    assert sorted(statuses) == [401] * 5 + [429] * 15
    assert len(checks) == 5


def test_a_successful_login_gives_its_place_back(app):
    for _ in range(4):
        login(app.test_client(), "vendedor2", "wrong-password")
    for _ in range(3):
        assert login(app.test_client(), "vendedor2").status_code == 302
    assert login(app.test_client(), "vendedor2", "wrong-password").status_code == 401  # the fifth place
    assert login(app.test_client(), "vendedor2").status_code == 429


def test_a_second_factor_code_counts_against_the_same_allowance(app):
    marta = app.test_client()
    login(marta, "marta")
    enrol(marta)
    for _ in range(5):
        other = app.test_client()
        login(other, "marta")
        assert post_form(other, "/login/second-factor", "/login/second-factor", {"code": "000000"}).status_code == 401
    other = app.test_client()
    assert login(other, "marta").status_code == 429
    assert pyotp  # the module enrol() relies on
