"""The API's opaque cursors: base64url of a small JSON array. Orders page by (created_at, id), the catalog
by SKU; a cursor of one list is refused by the other."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import datetime

from nexo.api.problems import ApiProblem
from nexo.api.repository import Keyset


def encode_order_cursor(last: Keyset) -> str:
    """The cursor after an orders page whose last row has this (created_at, id)."""
    created_at, order_id = last
    return _opaque([created_at.isoformat(), str(order_id)])


def decode_order_cursor(cursor: str) -> Keyset:
    """(created_at, id) of an orders cursor; invalid_request for anything else."""
    try:
        created_at, order_id = _unwrap(cursor)
        return datetime.fromisoformat(created_at), uuid.UUID(order_id)
    except (ValueError, TypeError, AttributeError):
        raise _unknown_cursor() from None


def encode_sku_cursor(sku: str) -> str:
    """The cursor after a catalog page whose last SKU is this."""
    return _opaque(["sku", sku])


def decode_sku_cursor(cursor: str) -> str:
    """The SKU of a catalog cursor; invalid_request for anything else."""
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
