"""ADR-006: the fingerprint tells a retry of one intent from a different intent under the same requestId."""

from __future__ import annotations

import hashlib
import json
import uuid

import pytest

from nexo.orders.fingerprint import FINGERPRINT_VERSION, canonical_v1, fingerprint, is_known_version

CLIENT = uuid.UUID("6b0f4f2e-2b7e-4c55-9d36-0d3c3f0a9b11")


def test_reordered_lines_give_the_same_fingerprint():
    assert fingerprint(CLIENT, "CEN", [("COR-200", 2), ("TOR-010", 5)]) == fingerprint(
        CLIENT, "CEN", [("TOR-010", 5), ("COR-200", 2)]
    )


def test_lower_case_and_surrounding_spaces_in_skus_give_the_same_fingerprint():
    assert fingerprint(CLIENT, "CEN", [("  cor-200 ", 2)]) == fingerprint(CLIENT, "CEN", [("COR-200", 2)])


def test_client_id_as_text_or_uuid_gives_the_same_fingerprint():
    assert fingerprint(str(CLIENT).upper(), "CEN", [("COR-200", 2)]) == fingerprint(CLIENT, "CEN", [("COR-200", 2)])


@pytest.mark.parametrize(
    "other",
    [
        {"lines": [("COR-200", 3)]},  # quantity
        {"lines": [("COR-201", 2)]},  # SKU
        {"lines": [("COR-200", 2), ("TOR-010", 1)]},  # one more line
        {"deposit": "NOR"},  # warehouse
        {"client": uuid.UUID("00000000-0000-4000-8000-000000000001")},  # client
    ],
)
def test_any_change_of_content_changes_the_fingerprint(other):
    base = {"client": CLIENT, "deposit": "CEN", "lines": [("COR-200", 2)]}
    changed = {**base, **other}
    assert fingerprint(changed["client"], changed["deposit"], changed["lines"]) != fingerprint(
        base["client"], base["deposit"], base["lines"]
    )


def test_fingerprint_is_sha256_of_the_canonical_json_with_only_client_deposit_and_lines():
    canonical = canonical_v1(CLIENT, "CEN", [("tor-010", 5), ("COR-200", 2)])
    assert json.loads(canonical) == {
        "clientId": str(CLIENT),
        "preferredDepositId": "CEN",
        "lines": [{"sku": "COR-200", "quantity": 2}, {"sku": "TOR-010", "quantity": 5}],
    }
    assert fingerprint(CLIENT, "CEN", [("COR-200", 2), ("TOR-010", 5)]) == hashlib.sha256(canonical.encode()).hexdigest()


def test_delivery_method_is_not_part_of_the_fingerprint_yet():
    # FINGERPRINT-DELIVERY (docs/unknowns.md) is open: the function takes no delivery method at all.
    with pytest.raises(TypeError):
        fingerprint(CLIENT, "CEN", [("COR-200", 2)], delivery_method="ENVIO")  # type: ignore[call-arg]


def test_the_current_version_is_1_and_unknown_versions_are_refused():
    assert FINGERPRINT_VERSION == 1 and is_known_version(1)
    assert not is_known_version(2)
    with pytest.raises(KeyError):
        fingerprint(CLIENT, "CEN", [("COR-200", 2)], version=2)
