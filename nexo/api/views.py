"""The Orders API routes (CONTRACT.md "Orders API"): thin views over the order form's use case."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import datetime
from typing import Any

from flask import Blueprint, current_app, g, request

from nexo.api import keys, problems, read_models
from nexo.api.http import json_response
from nexo.api.problems import ApiProblem
from nexo.api.repository import Keyset
from nexo.api.schemas import Catalog, CatalogQuery, OrderIn, OrderOut, OrderPage, OrdersQuery, Problem
from nexo.api.spec import api_spec, document, responses
from nexo.api.submit import submit_order
from nexo.extensions import csrf, get_db

bp = Blueprint("api", __name__, url_prefix="/api/v1")
# A bearer key is not sent by a browser on its own, so there is no cross-site request to forge.
csrf.exempt(bp)

# An order of MAX_LINES lines is a few KiB; 2,000 lines (~70 KiB) still reach the schema's precise error.
MAX_BODY_BYTES = 128 * 1024
# Endpoint -> the permission its key's user needs; get_order checks who may see the order itself.
PERMISSIONS = {"api.create_order": "orders.create", "api.list_orders": "orders.create", "api.catalog": "orders.create"}
PUBLIC = {"api.openapi"}


@bp.before_request
def authenticate():
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
    permission = PERMISSIONS.get(request.endpoint or "")
    if permission and not principal.user.can(permission):
        raise ApiProblem("forbidden", f"The key's user ({principal.user.username}) lacks {permission}.")
    if request.endpoint == "api.create_order":
        g.idempotency_key = _idempotency_key()
        _require_json_object()


def _idempotency_key() -> uuid.UUID:
    raw = request.headers.get("Idempotency-Key")
    if raw is None:
        raise ApiProblem(
            "idempotency_key_missing",
            "POST /api/v1/orders needs an Idempotency-Key header: a UUID "
            "you create once per order and send again on every retry of it.",
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
        raise ApiProblem("unsupported_media_type", "Send the order as `Content-Type: application/json`.")
    if request.get_json(silent=True) is None:
        raise ApiProblem("invalid_request", "The body is not valid JSON.", errors={"body": ["Not valid JSON."]})


def _validated() -> Any:
    """The body and query spectree validated for this request (request.context, which Flask's types do not declare)."""
    return request.context  # type: ignore[attr-defined]


@bp.app_errorhandler(ApiProblem)
def api_problem(problem: ApiProblem):
    return problems.from_problem(problem)


@bp.post("/orders")
@api_spec.validate(
    json=OrderIn,
    resp=responses(HTTP_201=OrderOut, HTTP_400=Problem, HTTP_409=Problem, HTTP_413=Problem, HTTP_415=Problem, HTTP_422=Problem),
    tags=["orders"],
)
def create_order():
    """Create an order, or replay the one already created with this Idempotency-Key.

    Runs the order form's use case (CU-01): the key is the form's request_id (one key space), claimed in
    the order's own transaction. New order → 201 with Location. The same key with the same intent
    (ADR-006 fingerprint: client, deposit, lines) → the same order again, 201 with `Idempotent-Replayed:
    true` and the order as it is now, no new effect. The same key with another intent →
    422 idempotency_key_reused. While the first request with a key is still running, a second one waits
    for it (up to 2 s) and replays its result; if it is still running then → 409 request_in_progress with
    Retry-After, nothing done (docs/adr/ADR-015). A business rejection (insufficient_stock, invalid_sku,
    price_source_unavailable) → 422 with that reason and nothing kept: the same key may be sent again.
    An order over the client's credit is created PENDIENTE_AUTORIZACION (not confirmed).
    """
    return submit_order(g.api_principal, g.idempotency_key, _validated().json)


@bp.get("/orders/<uuid:order_id>")
@api_spec.validate(resp=responses(HTTP_200=OrderOut, HTTP_404=Problem), tags=["orders"])
def get_order(order_id: uuid.UUID):
    """One order: its salesperson's keys, credit and admins may read it; anyone else gets 404."""
    with get_db().reading_one() as conn:
        order = read_models.visible_order(conn, order_id, g.api_principal.user)
    if order is None:
        raise ApiProblem("not_found", "No such order.")
    return json_response(order)


@bp.get("/orders")
@api_spec.validate(query=OrdersQuery, resp=responses(HTTP_200=OrderPage, HTTP_400=Problem), tags=["orders"])
def list_orders():
    """The key's user's orders, newest first, `limit` per page; pass `next_cursor` as `cursor` for the next."""
    query: OrdersQuery = _validated().query
    after = _decode_cursor(query.cursor) if query.cursor else None
    with get_db().reading_one() as conn:
        orders, last = read_models.orders_page(conn, g.api_principal.user.id, status=query.status, after=after, limit=query.limit)
    return json_response({"orders": orders, "next_cursor": _encode_cursor(last) if last else None})


@bp.get("/catalog")
@api_spec.validate(query=CatalogQuery, resp=responses(HTTP_200=Catalog, HTTP_400=Problem), tags=["catalog"])
def catalog():
    """Products by SKU with their server price (null: none, orders of it are refused) and units available.

    Every product by default. `q` keeps those whose SKU or name starts with it; `limit` pages (pass
    `next_cursor` as `cursor`, with the same `q`, for the next page).
    """
    query: CatalogQuery = _validated().query
    after = _decode_sku_cursor(query.cursor) if query.cursor else None
    with get_db().reading_one() as conn:  # one statement: no BEGIN, no ROLLBACK
        items, last = read_models.catalog(conn, text=query.q or "", after=after, limit=query.limit)
    return json_response({"items": items, "next_cursor": _encode_sku_cursor(last) if last else None})


@bp.get("/openapi.json")
@api_spec.validate(resp=responses(HTTP_200=None), tags=["meta"], skip_validation=True)
def openapi():
    """This document (OpenAPI 3.1)."""
    doc = current_app.extensions.get("nexo.api_openapi")
    if doc is None:
        doc = current_app.extensions["nexo.api_openapi"] = document(api_spec.spec)
    return json_response(doc)


# Cursors are opaque to clients: base64url of a small JSON array. Orders page by (created_at, id),
# the catalog by SKU; a cursor of one list is refused by the other.


def _encode_cursor(last: Keyset) -> str:
    created_at, order_id = last
    return _opaque([created_at.isoformat(), str(order_id)])


def _decode_cursor(cursor: str) -> Keyset:
    try:
        created_at, order_id = _unwrap(cursor)
        return datetime.fromisoformat(created_at), uuid.UUID(order_id)
    except (ValueError, TypeError, AttributeError):
        raise _unknown_cursor() from None


def _encode_sku_cursor(sku: str) -> str:
    return _opaque(["sku", sku])


def _decode_sku_cursor(cursor: str) -> str:
    try:
        tag, sku = _unwrap(cursor)
    except (ValueError, TypeError):
        raise _unknown_cursor() from None
    if tag != "sku" or not isinstance(sku, str):
        raise _unknown_cursor()
    return sku


def _opaque(values: list) -> str:
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


def _unwrap(cursor: str):
    # Raises ValueError for what is not base64 (binascii.Error is one) or not JSON.
    return json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))


def _unknown_cursor() -> ApiProblem:
    return ApiProblem(
        "invalid_request",
        "Unknown cursor: pass next_cursor from the previous page as is.",
        errors={"cursor": ["Not a cursor this API issued."]},
    )
