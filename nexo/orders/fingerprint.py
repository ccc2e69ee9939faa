"""ADR-006: the fingerprint that tells a retry of an intent from a different intent under the same requestId.

The fingerprint covers what the salesperson asked for (client, warehouse, lines) and nothing about how
the request travelled (no tracing ids, no timestamps, no field order). It is stored next to the key with
its version, so a future change of the normalisation never makes old retries look like conflicts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

FINGERPRINT_VERSION = 1


def normalise_sku(sku: str) -> str:
    """The catalog spelling of a SKU typed by a person: trimmed and upper-case."""
    return sku.strip().upper()


def canonical_v1(client_id, preferred_deposit_id: str, lines: Iterable[tuple[str, int]]) -> str:
    """Version 1 canonical JSON: clientId, preferredDepositId and the lines normalised and sorted by SKU."""
    normalised = sorted(
        ({"sku": normalise_sku(sku), "quantity": int(qty)} for sku, qty in lines),
        key=lambda line: (line["sku"], line["quantity"]),
    )
    # deliveryMethod is deliberately NOT part of the intent yet: whether it belongs here is an open
    # question (docs/unknowns.md, FINGERPRINT-DELIVERY). Adding it means FINGERPRINT_VERSION = 2.
    document = {
        "clientId": str(client_id).lower(),
        "preferredDepositId": preferred_deposit_id.strip().upper(),
        "lines": normalised,
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_CANONICAL = {1: canonical_v1}


def fingerprint(
    client_id, preferred_deposit_id: str, lines: Iterable[tuple[str, int]], version: int = FINGERPRINT_VERSION
) -> str:
    """SHA-256 (hex) of the canonical JSON of this version; KeyError for a version this code does not know."""
    canonical = _CANONICAL[version](client_id, preferred_deposit_id, lines)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def is_known_version(version: int) -> bool:
    """True when this code can recompute fingerprints of that version."""
    return version in _CANONICAL
