"""The API's cursors. Orders page by (created_at, id), the catalog by SKU.

Each cursor's form is the pattern the OpenAPI document declares for it (nexo/api/schemas.py), and every
string of that form is a position in its list: the document tells the truth about it (ADR-020's
conformance run). A string of another form, a catalog cursor given to the orders or an orders cursor to
the catalog included, is refused by the schema as invalid_request (400), never read as something else.

- orders: `<microseconds since 1970 UTC>-<the order id as 32 hex digits>`, the last row of the page;
- catalog: the last SKU's UTF-8 bytes in lowercase hex.
"""

from __future__ import annotations

import unicodedata
import uuid
from datetime import UTC, datetime, timedelta

from nexo.api.repository import Keyset

ORDER_CURSOR_PATTERN = r"^[0-9]{1,16}-[0-9a-f]{32}$"  # 16 digits of microseconds reach past the year 2200
SKU_CURSOR_PATTERN = r"^(?:[0-9a-f]{2}){1,160}$"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def encode_order_cursor(last: Keyset) -> str:
    """The cursor after an orders page whose last row has this (created_at, id)."""
    created_at, order_id = last
    return f"{(created_at - _EPOCH) // timedelta(microseconds=1)}-{order_id.hex}"


def decode_order_cursor(cursor: str) -> Keyset:
    """(created_at, id) of a cursor of ORDER_CURSOR_PATTERN's form (the schema checked it)."""
    micros, order_hex = cursor.split("-")
    return _EPOCH + timedelta(microseconds=int(micros)), uuid.UUID(hex=order_hex)


def encode_sku_cursor(sku: str) -> str:
    """The cursor after a catalog page whose last SKU is this."""
    return sku.encode().hex()


def decode_sku_cursor(cursor: str) -> str:
    """The SKU of a cursor of SKU_CURSOR_PATTERN's form. A made-up cursor still names a place in the SKU order:
    bytes that are not UTF-8 read as U+FFFD, and control characters, which no SKU holds (and the database
    connection refuses, nexo/form_input.py), are dropped."""
    text = bytes.fromhex(cursor).decode("utf-8", "replace")
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cc")
