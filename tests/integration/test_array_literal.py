"""array_literal (nexo/db.py): what it sends reads back in Postgres exactly as the Python values were.

The order's transaction passes its SKUs, quantities, prices and event ids this way instead of as lists
(docs/performance.md, "Arrays as text"); a SKU or a destination name that did not survive the trip
would reserve or record the wrong thing.
"""

from __future__ import annotations

import uuid

import pytest

from nexo.db import array_literal

AWKWARD_TEXT = [
    "TOR-010",
    'comillas "dobles"',
    "barra \\ invertida",
    "\\",
    '\\"',
    "coma, y llaves {}",
    " espacios al borde ",
    "",
    "NULL",
    "null",
    "ñandú – ünïcode ✓",
    "línea\nnueva\ty tab",
    None,
]


@pytest.mark.parametrize(
    ("values", "cast"),
    [
        (AWKWARD_TEXT, "text[]"),
        ([uuid.uuid4(), None, uuid.uuid4()], "uuid[]"),
        ([1, 0, -7, 2_147_483_647], "integer[]"),
        ([10**15, -(10**15), 0], "bigint[]"),
        ([], "text[]"),
        ([None], "uuid[]"),
    ],
)
def test_values_read_back_as_they_were(db, values, cast):
    with db.reading() as conn:
        row = conn.execute(f"SELECT %s::{cast} AS back", [array_literal(values)]).fetchone()
    assert row["back"] == values


def test_a_generator_is_taken_once(db):
    with db.reading() as conn:
        row = conn.execute("SELECT %s::text[] AS back", [array_literal(s for s in ("a", "b"))]).fetchone()
    assert row["back"] == ["a", "b"]


def test_unnest_keeps_the_order_and_pairs_columns(db):
    # The shape the order's statements use: parallel arrays unnested side by side.
    skus, quantities = ["B", 'A"', "C\\"], [3, 1, 2]
    with db.reading() as conn:
        rows = conn.execute(
            "SELECT sku, quantity FROM unnest(%s::text[], %s::integer[]) WITH ORDINALITY AS l(sku, quantity, position)"
            " ORDER BY position",
            [array_literal(skus), array_literal(quantities)],
        ).fetchall()
    assert [(r["sku"], r["quantity"]) for r in rows] == list(zip(skus, quantities, strict=True))
