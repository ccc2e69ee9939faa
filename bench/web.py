"""A salesperson's browser, reduced to what order entry sends: log in, open the form, post orders."""

from __future__ import annotations

import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import requests

_CSRF = re.compile(r'name="csrf_token"[^>]*value="([^"]+)"')
FORM_ROWS = 5                 # the form shows 5 line rows; the unused ones are posted empty, as a browser does


class Salesperson:
    """One logged-in session with the CSRF token of its order form."""

    def __init__(self, base_url: str, username: str, password: str):
        self.base_url = base_url
        self.username = username
        self.http = requests.Session()
        login_page = self.http.get(base_url + "/login", timeout=30)
        answer = self.http.post(base_url + "/login", allow_redirects=False, timeout=30, data={
            "username": username, "password": password, "csrf_token": _token(login_page.text)})
        if answer.status_code != 302:
            raise RuntimeError(f"login of {username} answered {answer.status_code}")
        # Flask-WTF's token is bound to the session and valid for hours: one GET serves every later POST.
        self.csrf = _token(self.http.get(base_url + "/orders/new", timeout=30).text)

    def post_order(self, client_id, lines: list[tuple[str, int]], warehouse: str = "CEN") -> requests.Response:
        """POST /orders/new with a fresh request_id, as the form does; the 303 is not followed."""
        form = {"csrf_token": self.csrf, "request_id": str(uuid.uuid4()), "client_id": str(client_id),
                "deposit_id": warehouse, "delivery_method": ""}
        for i in range(max(FORM_ROWS, len(lines))):
            sku, quantity = lines[i] if i < len(lines) else ("", "")
            form[f"lines-{i}-sku"], form[f"lines-{i}-quantity"] = sku, str(quantity)
        return self.http.post(self.base_url + "/orders/new", data=form, allow_redirects=False, timeout=60)


def log_in_all(base_url: str, usernames: list[str], password: str, parallel: int = 4) -> list[Salesperson]:
    """Log every username in (a few at a time: password hashing is deliberately slow)."""
    started = time.monotonic()
    with ThreadPoolExecutor(parallel) as pool:
        people = list(pool.map(lambda name: Salesperson(base_url, name, password), usernames))
    print(f"[bench]   {len(people)} salespeople logged in through /login in {time.monotonic() - started:.1f} s",
          flush=True)
    return people


def _token(html: str) -> str:
    match = _CSRF.search(html)
    if not match:
        raise RuntimeError("no csrf_token on the page")
    return match.group(1)
