"""The Orders API routes (CONTRACT.md "Orders API", "Order lifecycle"): thin views over the use cases the
pages run too (nexo/api/submit.py for orders, nexo/api/lifecycle.py for cancel, shipments, payments)."""

from __future__ import annotations

import uuid
from typing import Any

from flask import Blueprint, g, request

from nexo.api import access, lifecycle, problems, read_models, webhook_subscriptions
from nexo.api.cursors import decode_order_cursor, decode_sku_cursor, encode_order_cursor, encode_sku_cursor
from nexo.api.http import json_response
from nexo.api.problems import ApiProblem
from nexo.api.schemas import (
    CancelIn,
    Catalog,
    CatalogQuery,
    OrderIn,
    OrderOut,
    OrderPage,
    OrdersQuery,
    PaymentIn,
    PaymentOut,
    Problem,
    ShipmentIn,
    ShipmentOut,
    WebhookCreated,
    WebhookIn,
    WebhookList,
)
from nexo.api.spec import api_spec, document_of, responses
from nexo.api.submit import submit_order
from nexo.extensions import get_db
from nexo.formatting import parse_order_number
from nexo.orders.finder import OrderFilters

bp = Blueprint("api", __name__, url_prefix="/api/v1")

bp.before_request(access.check_request)


@bp.before_request
def _one_value_per_parameter() -> None:
    """A query parameter given twice (?status=a&status=b) is refused, not read as its first value: every
    parameter of this API takes one value (OpenAPI's default, form style without explode)."""
    repeated = sorted(name for name in request.args if len(request.args.getlist(name)) > 1)
    if repeated:
        raise ApiProblem(
            "invalid_request",
            "The request does not match the schema; see errors.",
            errors={name: ["Given more than once; this parameter takes one value."] for name in repeated},
        )


def _validated() -> Any:
    """The body and query spectree validated for this request (request.context, which Flask's types do not declare)."""
    return request.context  # type: ignore[attr-defined]


@bp.app_errorhandler(ApiProblem)
def api_problem(problem: ApiProblem):
    return problems.from_problem(problem)


@bp.post("/orders")
@api_spec.validate(
    json=OrderIn,
    resp=responses(
        HTTP_201=OrderOut,
        HTTP_400=(Problem, "idempotency_key_missing; invalid_request: a body of another form than the document's."),
        HTTP_409=Problem,
        HTTP_413=Problem,
        HTTP_415=Problem,
        HTTP_422=(
            Problem,
            "insufficient_stock, invalid_sku, price_source_unavailable (nothing kept); idempotency_key_reused; "
            "unknown_reference: no such client or warehouse; inconsistent_request: a SKU on two lines.",
        ),
    ),
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
@api_spec.validate(
    query=OrdersQuery,
    resp=responses(
        HTTP_200=(OrderPage, "The page; a filter that matches nothing (a client_id or number no order has) is an empty list."),
        HTTP_400=(Problem, "invalid_request: a parameter of another form than the document's, or given twice."),
        HTTP_422=(Problem, "inconsistent_request: created_to before created_from."),
    ),
    tags=["orders"],
)
def list_orders():
    """The key's user's orders, newest first, `limit` per page; pass `next_cursor` as `cursor` for the next.

    Filters combine (AND). A cursor is `next_cursor` as given: one of another form is a 400.
    """
    query: OrdersQuery = _validated().query
    after = decode_order_cursor(query.cursor) if query.cursor else None
    filters = OrderFilters(
        number=parse_order_number(query.number) if query.number else None,
        # A client_id no client has is a filter that matches nothing: 200 with an empty list, as a status no
        # order is in. Not 404: the resource is this list, which exists; the client is only a condition on it,
        # and answering "no such client" would tell a key which clients exist.
        client_id=query.client_id,
        statuses=(query.status,) if query.status else (),
        sku=(query.sku or "").strip().upper(),
        since=query.created_from,
        until=query.created_to,
    )
    if query.created_from and query.created_to and query.created_from > query.created_to:
        raise ApiProblem(
            "inconsistent_request", "The date range ends before it starts.", errors={"created_to": ["Before created_from."]}
        )
    with get_db().reading_one() as conn:
        orders, last = read_models.orders_page(conn, g.api_principal.user.id, filters=filters, after=after, limit=query.limit)
    return json_response({"orders": orders, "next_cursor": encode_order_cursor(last) if last else None})


@bp.get("/catalog")
@api_spec.validate(query=CatalogQuery, resp=responses(HTTP_200=Catalog, HTTP_400=Problem), tags=["catalog"])
def catalog():
    """Products by SKU with their server price (null: none, orders of it are refused) and units available.

    Every product by default. `q` keeps those whose SKU or name holds each of its words
    (so those whose SKU or name starts with it, as CONTRACT.md has it); `limit` pages (pass
    `next_cursor` as `cursor`, with the same `q`, for the next page).
    """
    query: CatalogQuery = _validated().query
    after = decode_sku_cursor(query.cursor) if query.cursor else None
    with get_db().reading_one() as conn:  # one statement: no BEGIN, no ROLLBACK
        items, last = read_models.catalog(conn, text=query.q or "", after=after, limit=query.limit)
    return json_response({"items": items, "next_cursor": encode_sku_cursor(last) if last else None})


@bp.post("/orders/<uuid:order_id>/cancel")
@api_spec.validate(
    json=CancelIn,
    resp=responses(
        HTTP_200=(OrderOut, "Cancelled now, or already ANULADO before: the order as it is now."),
        HTTP_400=(Problem, "invalid_request: no reason, only spaces, control characters, over 500 characters."),
        HTTP_404=(Problem, "not_found: no such order, or another salesperson's."),
        HTTP_409=(Problem, "order_not_cancellable: RECHAZADO, or something was already dispatched."),
        HTTP_413=Problem,
        HTTP_415=Problem,
    ),
    tags=["order lifecycle"],
)
def cancel_order(order_id: uuid.UUID):
    """Cancel an order that nothing has left the warehouse of (CONFIRMADO or PENDIENTE_AUTORIZACION).

    The key's user must be the order's salesperson or hold orders.cancel (credit, the owner); anyone
    else gets 404, as for reading it. In one transaction: ANULADO, every unit it reserved released,
    its credit charge given back to the client, the cancellations sent to the warehouse and the fiscal
    provider (order.handoff_cancelled, billing.intent_cancelled; an event that had not left yet is
    withdrawn instead: RETIRADO), an audit row naming the key and the reason. Cancelling an ANULADO
    order again answers 200 with it and releases nothing twice, so a retry is safe without a key.
    """
    return lifecycle.cancel_order(g.api_principal, order_id, _validated().json)


@bp.post("/orders/<uuid:order_id>/shipments")
@api_spec.validate(
    json=ShipmentIn,
    resp=responses(
        HTTP_201=(ShipmentOut, "The shipment; Idempotent-Replayed: true when it is the one this key already made."),
        HTTP_400=(
            Problem,
            "idempotency_key_missing; invalid_request with errors: a quantity that is not a JSON integer from 1, "
            "a bad Idempotency-Key, a SKU not pending in the order, a SKU twice.",
        ),
        HTTP_404=(Problem, "not_found: no such order."),
        HTTP_409=(
            Problem,
            "order_not_dispatchable: not CONFIRMADO or DESPACHADO_PARCIAL; request_in_progress (Retry-After).",
        ),
        HTTP_413=Problem,
        HTTP_415=Problem,
        HTTP_422=(
            Problem,
            "exceeds_remaining: more than remains of a line (remaining lists them); "
            "idempotency_key_reused: the key made another shipment.",
        ),
    ),
    tags=["order lifecycle"],
)
def create_shipment(order_id: uuid.UUID):
    """Record what left the warehouse for a confirmed order (warehouse.dispatch).

    In one transaction: the shipment and its lines, the order's firm reservation consumed for those
    units (on hand and reserved both go down), the order DESPACHADO_PARCIAL or, once nothing remains,
    DESPACHADO, an audit row naming the key. Any refusal keeps nothing. The same Idempotency-Key with
    the same body again → the same shipment, 201 with Idempotent-Replayed: true, nothing dispatched
    twice; with another body → 422 idempotency_key_reused. A request that waits over 2 s for a row
    another one holds → 409 request_in_progress (its key) or 503 (the order), with Retry-After.
    """
    return lifecycle.ship(g.api_principal, order_id, g.idempotency_key, _validated().json)


@bp.get("/orders/<uuid:order_id>/shipments/<uuid:shipment_id>")
@api_spec.validate(resp=responses(HTTP_200=ShipmentOut, HTTP_404=Problem), tags=["order lifecycle"])
def get_shipment(order_id: uuid.UUID, shipment_id: uuid.UUID):
    """One shipment of the order (warehouse.dispatch): where a shipment's Location points."""
    return lifecycle.shipment(order_id, shipment_id)


@bp.post("/clients/<uuid:client_id>/payments")
@api_spec.validate(
    json=PaymentIn,
    resp=responses(
        HTTP_201=(PaymentOut, "The payment; Idempotent-Replayed: true when it is the one this key already made."),
        HTTP_400=(
            Problem,
            "idempotency_key_missing; invalid_request with errors: an amount that is not a JSON integer of cents "
            "from 1, an empty reference, a bad Idempotency-Key.",
        ),
        HTTP_404=(Problem, "not_found: no such client."),
        HTTP_409=(Problem, "request_in_progress: the first request with this key is still running (Retry-After)."),
        HTTP_413=Problem,
        HTTP_415=Problem,
        HTTP_422=(
            Problem,
            "payment_exceeds_exposure: more than the client owes (exposure_cents says how much); "
            "idempotency_key_reused: the key made another payment.",
        ),
    ),
    tags=["payments"],
)
def create_payment(client_id: uuid.UUID):
    """Record a client's payment (credit.authorize), for an accounting system.

    In one transaction: the payment, the client's exposure lowered by it (never below zero), an audit
    row naming the key. exposure_cents in the answer is what the client owes now. Whether the payment
    lets a waiting order through is still the credit officer's decision. The same Idempotency-Key with
    the same body again → the same payment, 201 with Idempotent-Replayed: true, the exposure lowered
    once; with another body → 422 idempotency_key_reused.
    """
    return lifecycle.pay(g.api_principal, client_id, g.idempotency_key, _validated().json)


@bp.post("/webhooks")
@api_spec.validate(
    json=WebhookIn,
    resp=responses(
        HTTP_201=(WebhookCreated, "The subscription and its secret, shown this once."),
        HTTP_400=(Problem, "invalid_request: a URL that is not absolute http(s), or in production not https to a public host."),
        HTTP_409=(Problem, "webhook_limit: the key already has 10 live subscriptions."),
        HTTP_413=Problem,
        HTTP_415=Problem,
    ),
    tags=["webhooks"],
)
def create_webhook():
    """Be told about this key's orders: POSTs to `url`, one per event asked for (ADR-022).

    Each notice is JSON {id, type, occurred_at, sequence, order}, sent with `Idempotency-Key` (= its
    id: the same notice may arrive twice, never two different ones with one key) and
    `X-Nexo-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body>` under the secret
    returned here. Any 2xx is an acknowledgement; anything else is retried with backoff, and after the
    last attempt the notice waits in the admin's dead letters. Notices about one order arrive in
    `sequence` order unless one of them had to be replayed by an admin.
    """
    return webhook_subscriptions.create(g.api_principal, _validated().json)


@bp.get("/webhooks")
@api_spec.validate(resp=responses(HTTP_200=WebhookList), tags=["webhooks"])
def list_webhooks():
    """This key's live subscriptions (never their secrets)."""
    return webhook_subscriptions.listed(g.api_principal)


@bp.delete("/webhooks/<int:subscription_id>")
@api_spec.validate(
    resp=responses(HTTP_204=None, HTTP_404=(Problem, "not_found: this key has no live subscription with that id.")),
    tags=["webhooks"],
)
def delete_webhook(subscription_id: int):
    """End a subscription: notices not yet delivered are withdrawn and never sent."""
    return webhook_subscriptions.delete(g.api_principal, subscription_id)


@bp.get("/openapi.json")
@api_spec.validate(resp=responses(HTTP_200=None), tags=["meta"], skip_validation=True)
def openapi():
    """This document (OpenAPI 3.1)."""
    return json_response(document_of())
