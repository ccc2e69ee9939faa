"""Who may call which API route, and the preconditions of a write, checked before any view runs (ADR-015).

Bearer key only (never the session cookie), then the permission, then — for a write — the
Idempotency-Key header and a JSON body. Each refusal is problem+json.
"""

from __future__ import annotations

import uuid

from flask import g, request

from nexo.api import keys
from nexo.api.problems import ApiProblem
from nexo.extensions import get_db

# An order of MAX_LINES lines is a few KiB; 2,000 lines (~70 KiB) still reach the schema's precise error.
MAX_BODY_BYTES = 128 * 1024
# Endpoint -> the permissions its key's user needs one of; get_order checks who may see the order itself,
# cancel_order whose orders the user may cancel (a salesperson their own, orders.cancel any).
PERMISSIONS = {
    "api.create_order": ("orders.create",),
    "api.list_orders": ("orders.create",),
    "api.catalog": ("orders.create",),
    "api.cancel_order": ("orders.create", "orders.cancel"),
    "api.create_shipment": ("warehouse.dispatch",),
    "api.get_shipment": ("warehouse.dispatch",),
    "api.create_payment": ("credit.authorize",),
    # Webhooks tell an integration about the orders it posted (ADR-022): a key that may post orders.
    "api.create_webhook": ("orders.create",),
    "api.list_webhooks": ("orders.create",),
    "api.delete_webhook": ("orders.create",),
}
IDEMPOTENT = {"api.create_order", "api.create_shipment", "api.create_payment"}  # Idempotency-Key required
JSON_BODY = IDEMPOTENT | {"api.cancel_order", "api.create_webhook"}
PUBLIC = {"api.openapi"}


def check_request() -> None:
    """Bearer key only (never the session cookie), then permission, then the POST's preconditions."""
    request.max_content_length = MAX_BODY_BYTES
    if request.endpoint in PUBLIC:
        return
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    principal = keys.authenticate(get_db(), presented.strip()) if scheme.lower() == "bearer" else None
    if principal is None:
        raise ApiProblem(
            "unauthorized",
            "Send a live API key as `Authorization: Bearer <key>`; a session cookie is not accepted here.",
            headers={"WWW-Authenticate": 'Bearer realm="nexo"'},
        )
    g.api_principal = principal
    needed = PERMISSIONS.get(request.endpoint or "", ())
    if needed and not any(principal.user.can(permission) for permission in needed):
        raise ApiProblem("forbidden", f"The key's user ({principal.user.username}) lacks {' or '.join(needed)}.")
    if request.endpoint in IDEMPOTENT:
        g.idempotency_key = _idempotency_key()
    if request.endpoint in JSON_BODY:
        _require_json_object()


def _idempotency_key() -> uuid.UUID:
    raw = request.headers.get("Idempotency-Key")
    if raw is None:
        raise ApiProblem(
            "idempotency_key_missing",
            f"POST {request.path} needs an Idempotency-Key header: a UUID you create "
            "once per order, shipment or payment and send again on every retry of it.",
        )
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        raw = raw[1:-1]  # the draft's sf-string form: "8e03978e-…"
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise ApiProblem(
            "invalid_request",
            "The Idempotency-Key must be a UUID.",
            errors={"Idempotency-Key": ["Must be a UUID, e.g. 8e03978e-40d5-43e8-bc93-6894a57f9324."]},
        ) from None


def _require_json_object() -> None:
    if request.mimetype != "application/json":
        raise ApiProblem("unsupported_media_type", "Send the body as `Content-Type: application/json`.")
    if request.get_json(silent=True) is None:
        raise ApiProblem("invalid_request", "The body is not valid JSON.", errors={"body": ["Not valid JSON."]})
