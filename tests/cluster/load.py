"""Orders streamed through several web hosts at once, every answer kept with its time and host."""

from __future__ import annotations

import collections
import threading
import time

import requests

from tests.e2e.order_forms import form_data, order_id_from
from tests.helpers import http_login

LINES = [("TOR-010", 1)]
THINK_S = 0.05


class OrderStream:
    """Threads posting the order form (GET it, POST it) through each base URL; 503s are kept to send again."""

    def __init__(self, bases: dict[str, str], users: list[str]):
        self.bases = bases
        self.answers: list[tuple[float, str, str, int, str]] = []  # (time, host, step, status, order id or body)
        self.errors: collections.Counter = collections.Counter()
        self.unanswered: list[tuple[str, requests.Session, dict]] = []  # (host, session, the form a 503 answered)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._post_orders, args=(host, http_login(base, user)), daemon=True)
            for host, base in bases.items()
            for user in users
        ]

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=40)

    def _post_orders(self, host: str, session: requests.Session) -> None:
        base = self.bases[host]
        while not self._stop.is_set():
            try:
                page = session.get(base + "/orders/new", timeout=20)
                self._keep(host, "get", page)
                if page.status_code != 200:
                    time.sleep(0.2)
                    continue
                data = form_data(page.text, "Corralón del Sur", LINES)
                sent_at = time.monotonic()
                answer = session.post(base + "/orders/new", data=data, allow_redirects=False, timeout=20)
                self._keep(host, "post", answer, sent_at)
                if answer.status_code == 503:
                    with self._lock:
                        self.unanswered.append((host, session, data))
                time.sleep(THINK_S)
            except requests.RequestException as exc:
                with self._lock:
                    self.errors[f"{host}:{type(exc).__name__}"] += 1
                time.sleep(0.2)

    def _keep(self, host: str, step: str, response: requests.Response, sent_at: float | None = None) -> None:
        # Kept with the time the request was sent: an answer to a request sent after a failure began tells
        # whether writes work again, one sent before may have committed before it.
        detail = order_id_from(response.headers["Location"]) if response.status_code == 303 else response.text[:300]
        with self._lock:
            self.answers.append((sent_at or time.monotonic(), host, step, response.status_code, detail))

    def resend_unanswered(self) -> list[str]:
        """Send each form a 503 answered again, as the 503 page offers (same requestId); the order ids answered."""
        created = []
        for host, session, data in list(self.unanswered):
            answer = session.post(self.bases[host] + "/orders/new", data=data, allow_redirects=False, timeout=20)
            self._keep(host, "resend", answer)
            assert answer.status_code == 303, (answer.status_code, answer.text[:500])
            created.append(order_id_from(answer.headers["Location"]))
        return created

    def statuses(self) -> collections.Counter:
        with self._lock:
            return collections.Counter((step, status) for _, _, step, status, _ in self.answers)

    def created(self, since: float = 0.0, host: str | None = None) -> list[str]:
        """Order ids answered with a 303 (after `since`, through `host` when given)."""
        with self._lock:
            return [d for t, h, step, status, d in self.answers if status == 303 and t >= since and (host is None or h == host)]

    def first_created_after(self, since: float, host: str) -> float | None:
        """When the first order sent after `since` through `host` that got its 303 was sent."""
        with self._lock:
            times = [t for t, h, _, status, _ in self.answers if status == 303 and t > since and h == host]
        return min(times) if times else None
