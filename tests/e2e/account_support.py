"""Helpers for the session and account tests: apps with other session settings, forms posted with their token."""

from __future__ import annotations

import dataclasses
import re

from nexo import create_app
from nexo.settings import Settings
from tests.helpers import DEMO_PASSWORD, csrf_token


def app_with(**security) -> object:
    """An app whose SecuritySettings differ from the environment's by these fields (close its pool after)."""
    settings = Settings.from_env()
    return create_app(
        dataclasses.replace(settings, security=dataclasses.replace(settings.security, **security)), test_config={"TESTING": True}
    )


def login(client, username: str, password: str = DEMO_PASSWORD, **kwargs):
    """Post the real login form; returns the response."""
    token = csrf_token(client.get("/login", **kwargs).get_data(as_text=True))
    return client.post("/login", data={"username": username, "password": password, "csrf_token": token}, **kwargs)


def post_form(client, page: str, action: str, data: dict | None = None):
    """POST action with the CSRF token of page (any logged-in page carries one in the logout form)."""
    token = csrf_token(client.get(page, follow_redirects=True).get_data(as_text=True))
    return client.post(action, data={**(data or {}), "csrf_token": token})


def one_time_password(html: str) -> str | None:
    """The value of data-one-time-password on a page, or None."""
    match = re.search(r'data-one-time-password="([^"]+)"', html)
    return match.group(1) if match else None


def is_logged_in(client) -> bool:
    """Whether a page behind the login answers (not a 302 to /login)."""
    response = client.get("/account")
    return response.status_code == 200
