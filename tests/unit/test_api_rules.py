"""Pure parts of the Orders API: field errors, the opaque cursor, the problem body, key hashing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from flask import Flask

from nexo.api import keys, problems
from nexo.api.cursors import decode_order_cursor, encode_order_cursor
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
