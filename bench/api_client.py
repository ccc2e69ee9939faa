"""An integration, reduced to what order entry sends through the Orders API: one bearer key, JSON orders.

Like bench/web.py it is built on http.client with one keep-alive connection per integration, so the
load generator costs as little as possible of the two cores it shares with the system under test.
"""

from __future__ import annotations

import http.client
import json
import time
import uuid
from urllib.parse import urlsplit

from nexo.api import keys

IDLE_S = 1.0  # gunicorn closes idle keep-alive connections after 2 s: reconnect before that


class Integration:
    """One API key and its connection."""

    def __init__(self, base_url: str, key: str):
        parts = urlsplit(base_url)
        self.host, self.port, self.key = parts.hostname, parts.port, key
        self._conn: http.client.HTTPConnection | None = None
        self._used = 0.0

    def post_order(self, client_id, lines: list[tuple[str, int]], warehouse: str = "CEN") -> tuple[int, str]:
        """POST /api/v1/orders with a fresh Idempotency-Key; returns (status, body)."""
        if self._conn is None or time.monotonic() - self._used > IDLE_S:
            if self._conn is not None:
                self._conn.close()
            self._conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        body = json.dumps(
            {"client_id": str(client_id), "deposit_id": warehouse, "lines": [{"sku": sku, "quantity": q} for sku, q in lines]}
        )
        headers = {
            "Authorization": f"Bearer {self.key}",
            "Idempotency-Key": str(uuid.uuid4()),
            "Content-Type": "application/json",
        }
        try:
            self._conn.request("POST", "/api/v1/orders", body=body, headers=headers)
            response = self._conn.getresponse()
            text = response.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            self._conn.close()
            self._conn = None
            raise
        self._used = time.monotonic()
        return response.status, text


def integrations(db, base_url: str, usernames: list[str]) -> list[Integration]:
    """One API key (created through nexo.api.keys, as `flask apikeys create` does) per bench salesperson."""
    return [
        Integration(base_url, keys.create_key(db, name=f"bench-{name}-{uuid.uuid4().hex[:6]}", username=name, actor="bench"))
        for name in usernames
    ]
