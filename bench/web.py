"""A salesperson's browser, reduced to what order entry sends: log in, open the form, post orders.

Built on http.client with one keep-alive connection per salesperson, not on requests: the load
generator shares the two cores with the system under test, so it should cost as little as possible.
The 303 after a POST is not followed and the session cookie sent is always the one the order form
was opened with: the flash message a POST adds to the cookie is what a browser's next page (the
order it was redirected to) would show and remove, so this is the browser's cookie after that page.
"""

from __future__ import annotations

import copy
import http.client
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from http.cookies import SimpleCookie
from urllib.parse import urlencode, urlsplit

_CSRF = re.compile(r'name="csrf_token"[^>]*value="([^"]+)"')
FORM_ROWS = 5  # the form shows 5 line rows; the unused ones are posted empty, as a browser does
IDLE_S = 1.0  # gunicorn closes idle keep-alive connections after 2 s: reconnect before that


class Salesperson:
    """One logged-in session with the CSRF token of its order form."""

    def __init__(self, base_url: str, username: str, password: str, *, order_form: bool = True):
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname, parts.port
        self.username = username
        self.cookie = ""
        self._conn: http.client.HTTPConnection | None = None
        self._used = 0.0
        self.timing = ""  # the last answer's Server-Timing header ("" when the server sends none)
        status, page = self.request("GET", "/login")
        status, _ = self.request("POST", "/login", {"username": username, "password": password, "csrf_token": _token(page)})
        if status != 302:
            raise RuntimeError(f"login of {username} answered {status}")
        # Flask-WTF's token is bound to the session and valid for hours: one GET serves every later POST.
        self.csrf = _token(self.request("GET", "/orders/new")[1]) if order_form else ""

    def another_tab(self) -> Salesperson:
        """The same session on a connection of its own (one per load-generator thread)."""
        twin = copy.copy(self)
        twin._conn, twin._used = None, 0.0
        return twin

    def request(
        self, method: str, path: str, form: dict | None = None, keep_cookie: bool = True, *, stamped: bool = False
    ) -> tuple[int, str]:
        """One request on the keep-alive connection; the session cookie is updated when keep_cookie. `stamped`
        sends the moment it was sent as `X-Request-Start`, as a proxy would (nexo/request_timing.py)."""
        if self._conn is None or time.monotonic() - self._used > IDLE_S:
            if self._conn is not None:
                self._conn.close()
            self._conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        headers = {"Cookie": f"session={self.cookie}"} if self.cookie else {}
        body = None
        if form is not None:
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if stamped:
            headers["X-Request-Start"] = f"t={time.time():.6f}"
        try:
            self._conn.request(method, path, body=body, headers=headers)
            response = self._conn.getresponse()
            text = response.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            self._conn.close()
            self._conn = None
            raise
        self._used = time.monotonic()
        self.timing = response.headers.get("Server-Timing", "")
        if keep_cookie:
            for header in response.headers.get_all("Set-Cookie") or []:
                morsel = SimpleCookie(header).get("session")
                if morsel is not None:
                    self.cookie = morsel.value
        return response.status, text

    def post_order(
        self, client_id, lines: list[tuple[str, int]], warehouse: str = "CEN", *, stamped: bool = False
    ) -> tuple[int, str]:
        """POST /orders/new with a fresh request_id, as the form does; returns (status, body)."""
        form = {
            "csrf_token": self.csrf,
            "request_id": str(uuid.uuid4()),
            "client_id": str(client_id),
            "deposit_id": warehouse,
            "delivery_method": "",
        }
        for i in range(max(FORM_ROWS, len(lines))):
            sku, quantity = lines[i] if i < len(lines) else ("", "")
            form[f"lines-{i}-sku"], form[f"lines-{i}-quantity"] = sku, str(quantity)
        return self.request("POST", "/orders/new", form, keep_cookie=False, stamped=stamped)


def log_in_all(base_url: str, usernames: list[str], password: str, parallel: int = 4) -> list[Salesperson]:
    """Log every username in (a few at a time: password hashing is deliberately slow)."""
    started = time.monotonic()
    with ThreadPoolExecutor(parallel) as pool:
        people = list(pool.map(lambda name: Salesperson(base_url, name, password), usernames))
    print(f"[bench]   {len(people)} salespeople logged in through /login in {time.monotonic() - started:.1f} s", flush=True)
    return people


def _token(html: str) -> str:
    match = _CSRF.search(html)
    if not match:
        raise RuntimeError("no csrf_token on the page")
    return match.group(1)
