"""HTTP delivery to the destinations (fiscal provider, warehouse) and how to read their answers.

Only the relay calls this, and never while a database transaction is open (ADR-004, guarantee 9).
Every attempt ends within RELAY_DELIVERY_TIMEOUT_S whatever the destination does (http_client.py),
and every error it reports is already storable (storable.py).
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass

from nexo.outbox import webhooks
from nexo.outbox.http_client import Answer, DeadlineExceeded, HttpClient, PrivateAddress, encode_json
from nexo.outbox.registry import DESTINATIONS, route
from nexo.outbox.storable import storable_text
from nexo.settings import Settings

# 408 and 429 say "try later"; every other 4xx says the request itself is wrong and will stay wrong.
TRANSIENT_4XX = {408, 429}

DELIVERED, TRANSIENT, PERMANENT = "delivered", "transient", "permanent"
# A cancellation whose original was withdrawn, answered "I never applied that original": nothing to undo,
# and nothing was applied (ADR-017). The fakes say so with a 422 carrying this error.
NOTHING_TO_UNDO = "nothing_to_undo"
ORIGINAL_NOT_APPLIED = "original_not_applied"


@dataclass(frozen=True)
class Outgoing:
    """One event to POST: its type, id (the Idempotency-Key) and payload; `original_withdrawn` for a
    cancellation whose original was withdrawn with its order's cancel (it may find nothing to undo)."""

    event_type: str
    event_id: object
    payload: dict
    original_withdrawn: bool = False
    # A webhook notice: its subscription's URL and signing secret, and whether it may only reach a public
    # address (ADR-022). None for the destinations whose base URL is a setting.
    target_url: str | None = None
    secret: str | None = None
    public_only: bool = False


@dataclass(frozen=True)
class DeliveryResult:
    """What one HTTP delivery attempt came to."""

    kind: str  # DELIVERED, TRANSIENT, PERMANENT or NOTHING_TO_UNDO
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


def deliver(client: HttpClient, settings: Settings, event: Outgoing) -> DeliveryResult:
    """POST the payload with Idempotency-Key = event id, ended by the deadline; never raises."""
    return deliver_all(client, settings, [event])[0]


def deliver_all(client: HttpClient, settings: Settings, events: list[Outgoing]) -> list[DeliveryResult]:
    """POST each event at once, each ended by its own deadline; never raises.

    One result per event, in order. The requests run concurrently on the process's client, so a batch
    costs about one deadline of wall time whatever its size (ADR-008).
    """
    results: list[DeliveryResult | None] = [None] * len(events)
    calls, sent = [], []
    for index, event in enumerate(events):
        path = route(event.event_type)
        if event.target_url is not None:
            calls.append(_signed_notice(event))
            sent.append((index, path.effect_field, event.original_withdrawn))
            continue
        target = DESTINATIONS[path.destination]
        url = target.base_url(settings)
        if not url:
            # A missing URL is a deployment mistake, not the event's fault: keep retrying until it is fixed.
            results[index] = DeliveryResult(
                TRANSIENT, error=f"{target.url_variable()} no está configurada", error_class="NotConfigured"
            )
            continue
        calls.append(("POST", path.url(url), event.payload, {"Idempotency-Key": str(event.event_id)}))
        sent.append((index, path.effect_field, event.original_withdrawn))
    for (index, effect_field, withdrawn), (answer, seconds) in zip(sent, client.request_all(calls), strict=True):
        result = _result(answer, effect_field, int(seconds * 1000))
        if withdrawn and _never_applied(answer, result):
            result = DeliveryResult(NOTHING_TO_UNDO, http_status=result.http_status, duration_ms=result.duration_ms)
        results[index] = result
    return [r for r in results if r is not None]


def _signed_notice(event: Outgoing) -> tuple:
    # The signature covers the exact bytes sent and the moment they were signed (webhooks.signature).
    body = encode_json(event.payload)
    headers = {
        "Idempotency-Key": str(event.event_id),
        webhooks.SIGNATURE_HEADER: webhooks.signature(event.secret or "", int(time.time()), body),
        "User-Agent": "Nexo-Webhooks/1",
    }
    return ("POST", event.target_url, body, headers, event.public_only)


def _never_applied(answer, result: DeliveryResult) -> bool:
    # Only a permanent refusal that names this reason: anything else (a 5xx, a timeout) may still hide
    # an original that arrived, and is retried or failed as usual.
    if result.kind != PERMANENT or isinstance(answer, BaseException) or not answer.complete:
        return False
    try:
        return json.loads(answer.text()).get("error") == ORIGINAL_NOT_APPLIED
    except (ValueError, AttributeError):
        return False


def _result(answer, effect_field: str | None, duration_ms: int) -> DeliveryResult:
    if isinstance(answer, DeadlineExceeded):  # slow connect, endless headers, a dribbled or endless body
        return _failure(TRANSIENT, "Timeout", str(answer), duration_ms)
    if isinstance(answer, PrivateAddress):  # a webhook URL into our own network stays refused (ADR-022)
        return _failure(PERMANENT, "PrivateAddress", str(answer), duration_ms)
    if isinstance(answer, BaseException):
        # A TransportError (refused or reset connection, a broken answer) is worth retrying; anything else
        # ends this attempt the same way, so it counts against RELAY_MAX_ATTEMPTS (guarantee 16).
        return _failure(TRANSIENT, type(answer).__name__, str(answer) or type(answer).__name__, duration_ms)
    try:
        return read_answer(answer, effect_field, duration_ms=duration_ms)
    except Exception as exc:  # reading an answer must not raise either, or no outcome is ever recorded
        return _failure(TRANSIENT, type(exc).__name__, str(exc) or type(exc).__name__, duration_ms)


def read_answer(answer: Answer, effect_field: str | None, *, duration_ms: int = 0) -> DeliveryResult:
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
    if effect_field is None:  # a webhook receiver's 2xx is all it owes us
        return DeliveryResult(DELIVERED, http_status=answer.status, duration_ms=duration_ms)
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
