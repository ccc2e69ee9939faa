"""HTTP delivery to the destinations (fiscal provider, warehouse) and how to read their answers.

Only the relay calls this, and never while a database transaction is open (ADR-004, guarantee 9).
Every attempt ends within RELAY_DELIVERY_TIMEOUT_S whatever the destination does (http_client.py),
and every error it reports is already storable (storable.py).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass

from nexo.outbox.http_client import Answer, DeadlineExceeded, HttpClient
from nexo.outbox.registry import DESTINATIONS
from nexo.outbox.storable import storable_text
from nexo.settings import Settings

# 408 and 429 say "try later"; every other 4xx says the request itself is wrong and will stay wrong.
TRANSIENT_4XX = {408, 429}

DELIVERED, TRANSIENT, PERMANENT = "delivered", "transient", "permanent"


@dataclass(frozen=True)
class DeliveryResult:
    """What one HTTP delivery attempt came to."""

    kind: str  # DELIVERED, TRANSIENT or PERMANENT
    http_status: int | None = None
    effect: str | None = None  # invoice number or ticket, when delivered
    error: str | None = None
    error_class: str | None = None  # exception name, for the dead letter's error signature
    duration_ms: int = 0


def classify(status: int) -> str:
    """DELIVERED for 2xx, TRANSIENT for 408/429/5xx, PERMANENT for the rest (other 4xx, stray 1xx/3xx)."""
    if 200 <= status < 300:
        return DELIVERED
    if status >= 500 or status in TRANSIENT_4XX:
        return TRANSIENT
    return PERMANENT


def deliver(client: HttpClient, settings: Settings, destination: str, event_id, payload: dict) -> DeliveryResult:
    """POST the payload with Idempotency-Key = event id, ended by the deadline; never raises."""
    return deliver_all(client, settings, [(destination, event_id, payload)])[0]


def deliver_all(client: HttpClient, settings: Settings, events: list[tuple[str, object, dict]]) -> list[DeliveryResult]:
    """POST each (destination, event id, payload) at once, each ended by its own deadline; never raises.

    One result per event, in order. The requests run concurrently on the process's client, so a batch
    costs about one deadline of wall time whatever its size (ADR-008).
    """
    results: list[DeliveryResult | None] = [None] * len(events)
    calls, sent = [], []
    for index, (destination, event_id, payload) in enumerate(events):
        target = DESTINATIONS[destination]
        url = target.base_url(settings)
        if not url:
            # A missing URL is a deployment mistake, not the event's fault: keep retrying until it is fixed.
            results[index] = DeliveryResult(
                TRANSIENT, error=f"{target.url_variable()} no está configurada", error_class="NotConfigured"
            )
            continue
        calls.append(("POST", url.rstrip("/") + target.path, payload, {"Idempotency-Key": str(event_id)}))
        sent.append((index, target))
    for (index, target), (answer, seconds) in zip(sent, client.request_all(calls), strict=True):
        results[index] = _result(answer, target.effect_field, int(seconds * 1000))
    return results


def _result(answer, effect_field: str, duration_ms: int) -> DeliveryResult:
    if isinstance(answer, DeadlineExceeded):  # slow connect, endless headers, a dribbled or endless body
        return _failure(TRANSIENT, "Timeout", str(answer), duration_ms)
    if isinstance(answer, BaseException):
        # A TransportError (refused or reset connection, a broken answer) is worth retrying; anything else
        # ends this attempt the same way, so it counts against RELAY_MAX_ATTEMPTS (issue 11).
        return _failure(TRANSIENT, type(answer).__name__, str(answer) or type(answer).__name__, duration_ms)
    try:
        return read_answer(answer, effect_field, duration_ms=duration_ms)
    except Exception as exc:  # reading an answer must not raise either, or no outcome is ever recorded
        return _failure(TRANSIENT, type(exc).__name__, str(exc) or type(exc).__name__, duration_ms)


def read_answer(answer: Answer, effect_field: str, *, duration_ms: int = 0) -> DeliveryResult:
    """Classify a destination's answer and pick its business effect out of a success."""
    kind = classify(answer.status)
    if kind != DELIVERED:
        return DeliveryResult(
            kind,
            http_status=answer.status,
            duration_ms=duration_ms,
            error=storable_text(f"HTTP {answer.status}: {_body_excerpt(answer)}"),
        )
    if not answer.complete:
        return DeliveryResult(
            PERMANENT,
            http_status=answer.status,
            duration_ms=duration_ms,
            error_class="BadAnswer",
            error=f"respuesta {answer.status} de más de {len(answer.body)} bytes, sin leer entera",
        )
    try:
        effect = json.loads(answer.text())[effect_field]
    except (ValueError, KeyError, TypeError):
        # The destination says it applied something but not what: a person must look (dead letter).
        return DeliveryResult(
            PERMANENT,
            http_status=answer.status,
            duration_ms=duration_ms,
            error=f"respuesta {answer.status} sin '{effect_field}'",
            error_class="BadAnswer",
        )
    return DeliveryResult(DELIVERED, http_status=answer.status, effect=storable_text(str(effect)), duration_ms=duration_ms)


def _failure(kind: str, error_class: str, message: str, duration_ms: int) -> DeliveryResult:
    return DeliveryResult(
        kind, error=storable_text(f"{error_class}: {message}"), error_class=error_class, duration_ms=duration_ms
    )


def _body_excerpt(answer: Answer, limit: int = 300) -> str:
    # A JSON error body is re-written without \uXXXX escapes, so the admin reads "rechazó", not "rechaz\u00f3".
    text = answer.text()
    with contextlib.suppress(ValueError):  # not JSON: shown as it came
        text = json.dumps(json.loads(text), ensure_ascii=False)
    return storable_text(text, limit)
