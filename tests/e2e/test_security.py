"""Security hardening through the real app: headers, cookie flags, login limits, error pages, escaping."""

from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path

import pytest
from flask import Blueprint

from nexo import create_app
from nexo.settings import SecuritySettings, Settings
from tests.helpers import DEMO_PASSWORD, csrf_token, free_port

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def _new_app(monkeypatch=None, *, env: dict | None = None, **config):
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    return create_app(test_config={"TESTING": True, **config})


@pytest.fixture
def apps():
    """Apps built by a test, their pools closed afterwards."""
    built = []
    yield built
    for app in built:
        app.extensions["nexo.db"].close()


def _login(client, username: str, password: str = DEMO_PASSWORD, **kwargs):
    token = csrf_token(client.get("/login", **kwargs).get_data(as_text=True))
    return client.post("/login", data={"username": username, "password": password, "csrf_token": token}, **kwargs)


def _session_cookie(response) -> str:
    cookies = [c for c in response.headers.getlist("Set-Cookie") if c.startswith("session=")]
    assert cookies, "no session cookie"
    return cookies[-1]


# --- headers -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/login", "/health", "/static/nexo.css", "/metrics", "/no/such/page"])
def test_every_response_carries_the_security_headers(client, path):
    with client.get(path) as response:  # a static file's response holds the file open until closed
        headers = response.headers
    csp = {part.split(" ", 1)[0]: part.split(" ", 1)[1] for part in headers["Content-Security-Policy"].split("; ")}
    assert csp["default-src"] == "'self'" and csp["script-src"] == "'self'"
    assert "unsafe-inline" not in headers["Content-Security-Policy"]
    assert csp["frame-ancestors"] == "'none'" and csp["object-src"] == "'none'"
    assert csp["base-uri"] == "'self'" and csp["form-action"] == "'self'"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert headers["X-Frame-Options"] == "DENY"
    assert "Strict-Transport-Security" not in headers  # plain HTTP: HSTS would be meaningless


def test_hsts_is_sent_over_https(client):
    assert client.get("/login", base_url="https://nexo.example").headers["Strict-Transport-Security"]


def test_no_template_has_inline_script_style_or_event_handler():
    # The CSP forbids them; a template that used one would break silently in the browser.
    offenders = []
    for path in TEMPLATES.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        for pattern in (r"<script(?![^>]*\bsrc=)[^>]*>", r"\sstyle\s*=", r"\son[a-z]+\s*=", r"javascript:", r"<style"):
            if re.search(pattern, text, re.IGNORECASE):
                offenders.append(f"{path.relative_to(TEMPLATES)}: {pattern}")
    assert offenders == []


# --- cookies -------------------------------------------------------------------------------------


def test_session_cookie_is_httponly_and_lax_and_not_secure_over_plain_http(client):
    cookie = _session_cookie(_login(client, "laura"))
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie


def test_session_cookie_is_secure_when_served_over_https(client):
    cookie = _session_cookie(_login(client, "laura", base_url="https://nexo.example"))
    assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie


def test_behind_a_trusted_proxy_the_forwarded_scheme_decides(monkeypatch, apps):
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}
    apps.append(trusting := _new_app(monkeypatch, env={"TRUSTED_PROXIES": "1"}))
    assert "Secure" in _session_cookie(_login(trusting.test_client(), "laura", headers=forwarded))
    monkeypatch.setenv("TRUSTED_PROXIES", "0")
    apps.append(direct := _new_app())
    # Without a trusted proxy anyone could send that header: it is ignored.
    assert "Secure" not in _session_cookie(_login(direct.test_client(), "laura", headers=forwarded))


def test_cookie_secure_always_marks_it_secure_even_over_http(monkeypatch, apps):
    apps.append(app := _new_app(monkeypatch, env={"COOKIE_SECURE": "always"}))
    assert "Secure" in _session_cookie(_login(app.test_client(), "laura"))


# --- login rate limits (in one process; tests/e2e/test_security_processes.py does two) -----------


def test_five_failed_logins_for_one_username_then_429_even_with_the_right_password(client):
    for _ in range(5):
        assert _login(client, "vendedor2", "wrong-password").status_code == 401
    refused = _login(client, "vendedor2")
    assert refused.status_code == 429
    assert "Demasiados intentos" in refused.get_data(as_text=True) and int(refused.headers["Retry-After"]) > 0
    assert _login(client, "laura").status_code == 302  # another username is not locked


def test_successful_logins_do_not_count(app):
    for _ in range(8):
        assert _login(app.test_client(), "laura").status_code == 302


def test_failed_logins_from_one_address_are_limited_across_usernames(apps):
    settings = dataclasses.replace(Settings.from_env(), security=SecuritySettings(login_limit_per_ip="3 per 15 minutes"))
    apps.append(app := create_app(settings, test_config={"TESTING": True}))
    client = app.test_client()
    for name in ("ana", "beto", "carla"):
        assert _login(client, name, "wrong").status_code == 401
    assert _login(client, "dario", "wrong").status_code == 429
    assert _login(client, "laura").status_code == 429


def test_login_keeps_working_when_redis_is_down(monkeypatch, apps, caplog):
    caplog.set_level(logging.INFO)
    apps.append(app := _new_app(monkeypatch, env={"REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}))
    client = app.test_client()
    for _ in range(7):  # past the limit: it is not enforced
        assert _login(client, "vendedor2", "wrong-password").status_code == 401
    assert _login(client, "vendedor2").status_code == 302
    assert any(r.name == "flask-limiter" and r.levelno >= logging.ERROR for r in caplog.records)


def test_bad_security_settings_stop_start_up(monkeypatch):
    from nexo.settings import SettingsError

    monkeypatch.setenv("LOGIN_RATE_LIMIT_IP", "many")
    with pytest.raises(SettingsError, match="LOGIN_RATE_LIMIT_IP"):
        create_app(test_config={"TESTING": True})


# --- errors and escaping ---------------------------------------------------------------------------


def test_a_forced_error_shows_a_spanish_page_without_traceback(apps, caplog):
    app = create_app()  # not TESTING: exactly as production handles errors
    apps.append(app)
    probe = Blueprint("probe_error", __name__)

    @probe.route("/_probe/boom")
    def boom():
        raise RuntimeError("secret internals at /srv/nexo/orders/service.py line 42")

    app.register_blueprint(probe)
    client = app.test_client()
    assert _login(client, "marta").status_code == 302
    response = client.get("/_probe/boom")
    body = response.get_data(as_text=True)
    assert response.status_code == 500 and "Error interno" in body
    for leak in ("Traceback", "RuntimeError", "secret internals", "service.py", "line 42"):
        assert leak not in body
    assert any(r.exc_info for r in caplog.records), "the error is logged for the team, with its traceback"


def test_a_typed_username_comes_back_escaped(client):
    evil = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
    body = _login(client, evil, "wrong").get_data(as_text=True)
    assert "<script>alert(1)" not in body and "<img src=x" not in body
    assert "&lt;script&gt;alert(1)" in body or "&#34;&gt;&lt;script&gt;" in body
