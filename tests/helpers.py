"""Small helpers shared by the test modules (imported, not fixtures)."""

from __future__ import annotations

import re
import socket

import requests

DEMO_PASSWORD = "nexo-demo"
_CSRF = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"|name="csrf_token" value="([^"]+)"')


def csrf_token(html: str) -> str:
    """The CSRF token of the first form on a page."""
    match = _CSRF.search(html)
    assert match, "no csrf_token on the page"
    return match.group(1) or match.group(2)


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_login(base_url: str, username: str, password: str = DEMO_PASSWORD) -> requests.Session:
    """A requests session logged in through the real login form of a live server."""
    session = requests.Session()
    token = csrf_token(session.get(base_url + "/login", timeout=10).text)
    response = session.post(base_url + "/login", data={"username": username, "password": password,
                                                       "csrf_token": token}, allow_redirects=False, timeout=10)
    assert response.status_code == 302, response.status_code
    return session
