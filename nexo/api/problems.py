"""RFC 9457 problem details: every error under /api/ is application/problem+json, never an HTML page.

`reason` carries the same words the order form uses (CONTRACT.md, "Orders API"), so an integration and
a salesperson are told the same thing about the same refusal.
"""

from __future__ import annotations

import json

from flask import Response, g, request

API_PREFIX = "/api/"
PROBLEM_JSON = "application/problem+json"

# reason -> (status, title). The titles are for a developer reading a log; `detail` says what happened.
REASONS = {
    "idempotency_key_missing": (400, "Idempotency-Key header required"),
    "invalid_request": (400, "Invalid request"),
    "unauthorized": (401, "Unauthorized"),
    "forbidden": (403, "Forbidden"),
    "not_found": (404, "Not found"),
    "method_not_allowed": (405, "Method not allowed"),
    "request_in_progress": (409, "A request with this Idempotency-Key is still in progress"),
    "order_not_cancellable": (409, "Order not cancellable"),
    "order_not_dispatchable": (409, "Order not dispatchable"),
    "webhook_limit": (409, "Too many webhook subscriptions"),
    "payload_too_large": (413, "Request body too large"),
    "uri_too_long": (414, "URI too long"),
    "unsupported_media_type": (415, "Unsupported media type"),
    "idempotency_key_reused": (422, "Idempotency-Key reused with another request"),
    "insufficient_stock": (422, "Insufficient stock"),
    "invalid_sku": (422, "Unknown SKU"),
    # A well-formed order naming a client or warehouse that does not exist: like an unknown SKU, a refusal of
    # what the request says, not of its form (a 400 would contradict the document, which accepts any UUID).
    "unknown_reference": (422, "Unknown client or warehouse"),
    # Each field has a valid form but together they cannot be done: one SKU on two lines, a SKU the order does
    # not have pending, a date range that ends before it starts. No JSON Schema can say these, so they are
    # not 400s (the document would call the request valid and the answer would contradict it).
    "inconsistent_request": (422, "Request contradicts itself"),
    "price_source_unavailable": (422, "No authoritative price"),
    "exceeds_remaining": (422, "More than remains to dispatch"),
    "payment_exceeds_exposure": (422, "Payment over what the client owes"),
    "rate_limited": (429, "Too many requests"),
    "internal_error": (500, "Internal error"),
    "unavailable": (503, "Service unavailable"),
}
# An HTTP error raised by Flask/Werkzeug (routing, body size, rate limit) in the API's words.
REASON_BY_STATUS = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "request_in_progress",
    413: "payload_too_large",
    414: "uri_too_long",
    415: "unsupported_media_type",
    429: "rate_limited",
    503: "unavailable",
}


class ApiProblem(Exception):
    """An API refusal, turned into problem+json by the API's error handler."""

    def __init__(
        self, reason: str, detail: str, *, errors: dict | None = None, headers: dict | None = None, extra: dict | None = None
    ):
        super().__init__(detail)
        self.reason, self.detail = reason, detail
        self.errors, self.headers, self.extra = errors, headers or {}, extra or {}


def is_api_request() -> bool:
    """True for any request under /api/ (the error handlers answer those with problem+json)."""
    return request.path.startswith(API_PREFIX)


def problem_response(
    reason: str, detail: str, *, errors: dict | None = None, headers: dict | None = None, extra: dict | None = None
) -> Response:
    """The problem+json response of a reason."""
    status, title = REASONS[reason]
    body = {
        "type": f"urn:nexo:problem:{reason}",
        "title": title,
        "status": status,
        "detail": detail,
        "reason": reason,
        **(extra or {}),
    }
    if errors is not None:
        body["errors"] = errors
    response = Response(json.dumps(body, ensure_ascii=False), status=status, mimetype=PROBLEM_JSON)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    if status == 429 and g.get("retry_after_s"):
        response.headers["Retry-After"] = str(g.retry_after_s)
    return response


def from_problem(problem: ApiProblem) -> Response:
    """The response of a raised ApiProblem."""
    return problem_response(problem.reason, problem.detail, errors=problem.errors, headers=problem.headers, extra=problem.extra)


def from_http_status(status: int, description: str | None = None) -> Response:
    """The problem+json of an HTTP error raised outside the API's views (404, 405, 413, 429, ...)."""
    reason = REASON_BY_STATUS.get(status, "internal_error" if status >= 500 else "invalid_request")
    if reason == "unavailable":
        # Whether a cut-off write was kept is unknown; the key makes repeating it safe (ADR-005, ADR-015).
        return problem_response(
            reason,
            "A service Nexo needs is not answering. Send the same request again, with "
            "the same Idempotency-Key, after Retry-After: it is never applied twice.",
            headers={"Retry-After": "5"},
        )
    detail = description or REASONS[reason][1]
    return problem_response(reason, detail, errors={"body": [detail]} if reason == "invalid_request" else None)
