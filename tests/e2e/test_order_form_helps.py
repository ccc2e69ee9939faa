"""The order form helps (ADR-021): every problem of a submission in one round, fields with a problem marked
(aria-invalid), each typed line's product, price, availability and amount, and the running total — on the
server for a form sent back, and live in the browser (progressive enhancement: the no-JS path is unchanged)."""

from __future__ import annotations

import re

from tests.e2e.browser_fixtures import fill_order
from tests.e2e.lifecycle_support import CORRALON, PLATINO, as_user, page
from tests.e2e.order_forms import form_data
from tests.e2e.page_walk import developer_language


def _row(html: str, index: int) -> str:
    rows = re.findall(r"<tr data-line-row.*?</tr>", html, re.S)
    return rows[index]


def test_an_unknown_sku_next_to_a_bad_quantity_is_reported_in_the_same_round(client, auth):
    as_user(client, auth, "vendedor1")
    html = page(client, "/orders/new")
    response = client.post("/orders/new", data=form_data(html, CORRALON, [("NOPE-1", 1), ("COR-200", "2,5")]))
    sent_back = response.get_data(as_text=True)
    assert response.status_code == 400
    assert 'data-reason="invalid_sku"' in _row(sent_back, 0) and 'aria-invalid="true"' in _row(sent_back, 0)
    assert "data-line-error" in _row(sent_back, 1) and 'aria-invalid="true"' in _row(sent_back, 1)
    assert "Cortadora de cerámica 200" in _row(sent_back, 1)  # the catalog still names the line
    assert developer_language(sent_back) == {}


def test_a_refusal_names_every_line_short_of_stock_or_unknown_at_once(client, auth):
    as_user(client, auth, "vendedor1")
    html = page(client, "/orders/new")
    lines = [("COR-118", 2), ("CAB-045", 41), ("NOPE-1", 1), ("TOR-010", 3)]
    response = client.post("/orders/new", data=form_data(html, CORRALON, lines))
    refused = response.get_data(as_text=True)
    assert response.status_code == 422
    reasons = [re.search(r'data-reason="([a-z_]+)"', _row(refused, i)) for i in range(4)]
    assert [r.group(1) if r else None for r in reasons] == ["insufficient_stock", "insufficient_stock", "invalid_sku", None]
    assert 'aria-invalid="true"' not in _row(refused, 3)
    assert "$ 450,00" in _row(refused, 3)  # 3 × $ 150,00


def test_a_form_sent_back_shows_each_line_s_product_price_and_the_total(client, auth):
    as_user(client, auth, "vendedor1")
    html = page(client, "/orders/new")
    response = client.post("/orders/new", data=form_data(html, CORRALON, [("cor-200", 3), ("TOR-010", "x")]))
    sent_back = response.get_data(as_text=True)
    assert response.status_code == 400
    hint = _row(sent_back, 0)
    assert "Cortadora de cerámica 200" in hint and "$ 3.200,00" in hint and "disponible: 500" in hint and "$ 9.600,00" in hint
    assert re.search(r'data-running-total="960000"', sent_back)


def test_the_total_is_set_against_the_client_s_available_credit(client, auth):
    as_user(client, auth, "vendedor1")
    html = page(client, "/orders/new")
    response = client.post("/orders/new", data=form_data(html, PLATINO, [("TOR-010", 100), ("COR-200", "0")]))
    sent_back = response.get_data(as_text=True)
    assert response.status_code == 400
    assert 'data-available-credit-cents="1000000"' in sent_back  # Platino: 1,000,000.00 − 990,000.00
    assert "Supera el crédito disponible" in sent_back  # 100 × $ 150,00 = $ 15.000,00
    platino = re.search(r'<option value="([0-9a-f-]{36})"[^>]*>Ferretería Platino', html).group(1)
    assert client.get(f"/orders/clients/{platino}/credit").get_json()["available_cents"] == 1_000_000


def test_the_line_lookup_answers_a_typed_sku_as_json(client, auth):
    as_user(client, auth, "vendedor1")
    item = client.get("/orders/skus/line?sku=cor-118").get_json()
    assert item == {
        "found": True,
        "sku": "COR-118",
        "name": item["name"],
        "price_cents": 1_250_000,
        "available": {"CEN": 1, "NOR": 0},
    }
    assert client.get("/orders/skus/line?sku=NOPE").get_json() == {"found": False, "sku": "NOPE"}
    as_user(client, auth, "sergio")
    assert client.get("/orders/skus/line?sku=COR-118").status_code == 403


def test_the_browser_shows_each_line_and_the_running_total_as_it_is_typed(people, shots):
    page_ = people.login("vendedor1", next_path="/orders/new")
    fill_order(page_, CORRALON, [("cor-200", 3), ("TOR-010", 2)])
    page_.locator("input[name='lines-2-sku']").focus()
    page_.wait_for_selector("[data-line-hint='TOR-010']")
    shots.take(page_, "hints")
    assert "Cortadora de cerámica 200" in page_.locator("[data-line-hint='COR-200']").inner_text()
    assert page_.locator("[data-running-total]").get_attribute("data-running-total") == "990000"
    assert page_.locator("[data-running-total-amount]").inner_text() == "$\u00a09.900,00"
    assert "crédito disponible del cliente: $\u00a05.000.000,00" in page_.locator("[data-credit-note]").inner_text()
