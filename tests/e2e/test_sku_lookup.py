"""The SKU lookup and a form that stays small whatever the catalog size."""

from __future__ import annotations

import re

from tests.e2e.order_forms import form_data

CATALOG_ROW = re.compile(r'<tr data-catalog-sku="([^"]+)">')


def _add_products(db, count: int) -> None:
    with db.transaction() as tx:
        tx.execute(
            """
            WITH p AS (INSERT INTO product (sku, name)
                       SELECT 'LOT-' || lpad(n::text, 5, '0'), 'Lote de prueba ' || n FROM generate_series(1, %s) AS n
                       RETURNING id)
            INSERT INTO stock_level (product_id, warehouse_id, on_hand) SELECT id, 'CEN', 5 FROM p""",
            [count],
        )
        tx.commit()


def test_lookup_finds_skus_and_names_by_prefix_with_price_and_availability(client, auth):
    auth.login("vendedor1")
    html = client.get("/orders/skus?q=cor").get_data(as_text=True)
    assert CATALOG_ROW.findall(html) == ["COR-118", "COR-200"]
    cor118 = re.search(r'<tr data-catalog-sku="COR-118">(.*?)</tr>', html, re.S).group(1)
    assert "$ 12.500,00" in cor118 and 'data-available="CEN">1<' in cor118 and 'data-available="NOR">0<' in cor118
    # The first word of the name counts too ("Cable unipolar …" is CAB-045), and a LIKE wildcard is literal.
    assert CATALOG_ROW.findall(client.get("/orders/skus?q=cable").get_data(as_text=True)) == ["CAB-045"]
    assert CATALOG_ROW.findall(client.get("/orders/skus?q=%25").get_data(as_text=True)) == []
    assert "sin precio" in client.get("/orders/skus?q=PRC").get_data(as_text=True)


def _found(client, text: str) -> list[str]:
    return CATALOG_ROW.findall(client.get("/orders/skus", query_string={"q": text}).get_data(as_text=True))


def test_lookup_finds_a_product_by_any_word_of_its_sku_or_name_in_any_order(client, auth):
    auth.login("vendedor1")
    # COR-200 is "Cortadora de cerámica 200": a word inside the SKU, the name's words, both mixed.
    assert _found(client, "200") == ["COR-200"]
    assert _found(client, "cortadora 200") == ["COR-200"]
    assert _found(client, "200 CORTADORA") == ["COR-200"]
    assert _found(client, "cor-118 cerámica") == ["COR-118"]
    assert _found(client, "118 cor") == ["COR-118"]
    # Accents and case aside, and a word in the middle of the name.
    assert _found(client, "ceramica") == ["COR-118", "COR-200"]
    assert _found(client, "UNIPOLAR rollo") == ["CAB-045"]
    # Every word must be there: one that is not finds nothing.
    assert _found(client, "cortadora 999") == []
    assert _found(client, "taladro") == []
    assert _found(client, "cable cortadora") == []


def test_lookup_is_paginated_without_javascript(client, auth, db):
    _add_products(db, 45)
    auth.login("vendedor1")
    first = client.get("/orders/skus?q=lot").get_data(as_text=True)
    assert CATALOG_ROW.findall(first) == [f"LOT-{n:05d}" for n in range(1, 21)]
    assert "data-page-next" in first and "data-page-previous" not in first
    third = client.get("/orders/skus?q=lot&page=3").get_data(as_text=True)
    assert CATALOG_ROW.findall(third) == [f"LOT-{n:05d}" for n in range(41, 46)]
    assert "data-page-next" not in third and "data-page-previous" in third


def test_lookup_needs_the_order_permission(client, auth):
    auth.login("laura")
    assert client.get("/orders/skus?q=cor").status_code == 403


def test_form_and_its_422_stay_small_with_a_big_catalog(client, auth, db):
    _add_products(db, 3000)
    auth.login("vendedor1")
    html = client.get("/orders/new").get_data(as_text=True)
    assert len(CATALOG_ROW.findall(html)) == 20 and "data-sku-lookup-form" in html
    assert len(html) < 30_000
    response = client.post("/orders/new", data=form_data(html, "Corralón del Sur", [("COR-118", 5), ("LOT-00007", 1)]))
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert CATALOG_ROW.findall(page) == ["COR-118", "LOT-00007"]  # the lines typed, now
    assert len(page) < 30_000


def test_lookup_answers_a_forged_page_number_with_a_page_not_an_error(client, auth):
    auth.login("vendedor1")
    # An OFFSET past bigint made Postgres refuse the query: a 500 page instead of an empty result.
    for page in ("99999999999999999999", "-3", "abc"):
        response = client.get(f"/orders/skus?q=cor&page={page}")
        assert response.status_code == 200, page
