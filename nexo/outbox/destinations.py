"""HTTP delivery to the destinations (fiscal provider, warehouse) and how to read their answers.

Only the relay calls this, and never while a database transaction is open (ADR-004, guarantee 9).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import requests

from nexo.settings import Settings

# event destination -> (path on the destination, field of the answer that carries the business effect)
ENDPOINTS = {
    "fiscal": ("/invoices", "invoice_number"),
    "warehouse": ("/handoffs", "ticket"),
}
# 408 and 429 say "try later"; every other 4xx says the request itself is wrong and will stay wrong.
TRANSIENT_4XX = {408, 429}

DELIVERED, TRANSIENT, PERMANENT = "delivered", "transient", "permanent"


@dataclass(frozen=True)
class DeliveryResult:
    """What one HTTP delivery attempt came to."""

    kind: str                       # DELIVERED, TRANSIENT or PERMANENT
    http_status: int | None = None
    effect: str | None = None       # invoice number or ticket, when delivered
    error: str | None = None
    error_class: str | None = None  # exception name, for the dead letter's error signature
    duration_ms: int = 0


def base_url(settings: Settings, destination: str) -> str | None:
    """The configured base URL of a destination (FISCAL_URL / WAREHOUSE_URL), or None."""
    return {"fiscal": settings.fiscal_url, "warehouse": settings.warehouse_url}[destination]


def classify(status: int) -> str:
    """DELIVERED for 2xx, TRANSIENT for 408/429/5xx, PERMANENT for the rest (other 4xx, stray 1xx/3xx)."""
    if 200 <= status < 300:
        return DELIVERED
    if status >= 500 or status in TRANSIENT_4XX:
        return TRANSIENT
    return PERMANENT


def deliver(session: requests.Session, settings: Settings, destination: str, event_id, payload: dict) -> DeliveryResult:
    """POST the payload with Idempotency-Key = event id and the configured timeout; never raises."""
    url = base_url(settings, destination)
    path, effect_field = ENDPOINTS[destination]
    if not url:
        # A missing URL is a deployment mistake, not the event's fault: keep retrying until it is fixed.
        return DeliveryResult(TRANSIENT, error=f"{destination.upper()}_URL no está configurada",
                              error_class="NotConfigured")
    timeout = settings.relay.delivery_timeout_s
    started = time.monotonic()
    try:
        response = session.post(url.rstrip("/") + path, json=payload, timeout=(timeout, timeout),
                                allow_redirects=False, headers={"Idempotency-Key": str(event_id)})
    except requests.RequestException as exc:      # timeout, refused connection, reset: all worth retrying
        return DeliveryResult(TRANSIENT, error=f"{type(exc).__name__}: {exc}"[:500], error_class=type(exc).__name__,
                              duration_ms=_ms_since(started))
    duration_ms = _ms_since(started)
    kind = classify(response.status_code)
    if kind != DELIVERED:
        return DeliveryResult(kind, http_status=response.status_code, duration_ms=duration_ms,
                              error=f"HTTP {response.status_code}: {_body_excerpt(response)}")
    try:
        effect = response.json()[effect_field]
    except (ValueError, KeyError, TypeError):
        # The destination says it applied something but not what: a person must look (dead letter).
        return DeliveryResult(PERMANENT, http_status=response.status_code, duration_ms=duration_ms,
                              error=f"respuesta {response.status_code} sin '{effect_field}'", error_class="BadAnswer")
    return DeliveryResult(DELIVERED, http_status=response.status_code, effect=str(effect), duration_ms=duration_ms)


def _body_excerpt(response: requests.Response, limit: int = 300) -> str:
    # A JSON error body is re-written without \uXXXX escapes, so the admin reads "rechazó", not "rechaz\u00f3".
    try:
        text = json.dumps(response.json(), ensure_ascii=False)
    except ValueError:
        text = response.text
    return text[:limit]


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
