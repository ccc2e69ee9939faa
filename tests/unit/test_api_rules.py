"""Pure parts of the Orders API: field errors, the opaque cursor, the problem body, key hashing."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime

from flask import Flask

from nexo.api import keys, problems
from nexo.api.cursors import (
    ORDER_CURSOR_PATTERN,
    SKU_CURSOR_PATTERN,
    decode_order_cursor,
    decode_sku_cursor,
    encode_order_cursor,
    encode_sku_cursor,
)
from nexo.api.spec import field_errors


def test_pydantic_locations_become_readable_field_paths():
    errors = field_errors(
        [
            {"loc": ("lines", 3, "quantity"), "msg": "too big"},
            {"loc": (), "msg": "not an object"},
            {"loc": ("lines", 3, "quantity"), "msg": "not an int"},
        ]
    )
    assert errors == {"lines[3].quantity": ["too big", "not an int"], "body": ["not an object"]}


def test_a_cursor_round_trips_and_is_opaque_url_safe_text():
    last = (datetime(2026, 11, 30, 9, 14, 0, 123456, tzinfo=UTC), uuid.uuid4())
    cursor = encode_order_cursor(last)
    assert set(cursor) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert decode_order_cursor(cursor) == last


def test_every_string_of_the_documented_cursor_forms_is_a_place_in_its_list():
    # The document declares the cursors' patterns; a made-up cursor of that form pages, it is not a 400.
    assert re.fullmatch(ORDER_CURSOR_PATTERN, encode_order_cursor((datetime(2026, 1, 1, tzinfo=UTC), uuid.uuid4())))
    at, order_id = decode_order_cursor("9" * 16 + "-" + "f" * 32)
    assert at.year > 2200 and order_id.hex == "f" * 32
    assert re.fullmatch(SKU_CURSOR_PATTERN, encode_sku_cursor("COR-200")) and decode_sku_cursor(encode_sku_cursor("Ñ-1")) == "Ñ-1"
    assert decode_sku_cursor("71049b3632e0") == "q\ufffd62\ufffd"  # no control character reaches the database


def test_a_problem_has_the_rfc9457_members_and_the_contract_reason():
    with Flask(__name__).test_request_context("/api/v1/orders"):
        response = problems.problem_response("idempotency_key_reused", "used", headers={"X-A": "1"})
    assert response.status_code == 422 and response.mimetype == "application/problem+json"
    assert response.get_json() == {
        "type": "urn:nexo:problem:idempotency_key_reused",
        "title": response.get_json()["title"],
        "status": 422,
        "detail": "used",
        "reason": "idempotency_key_reused",
    }


def test_keys_are_stored_as_sha256_and_never_equal_their_hash():
    key = keys.KEY_PREFIX + "abc"
    assert len(keys.hash_key(key)) == 64 and keys.hash_key(key) != key and keys.hash_key(key) == keys.hash_key(key)
