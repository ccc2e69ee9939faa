"""Pages speak to people (ADR-021): on every page each demo user reaches, with orders in every state, a pending
authorization and a dead letter, the visible text holds no enum, code, rule number, JSON or file path; the
codes stay in data-* attributes for tests."""

from __future__ import annotations

import pytest

from tests.e2e.lifecycle_support import PLATINO, as_user, cancel, dispatch, page
from tests.e2e.order_forms import form_data, request_id_of
from tests.e2e.page_walk import USERS, developer_language, every_page, morning_with_everything, visible_text
from tests.e2e.test_client_page import form_fields
from tests.helpers import csrf_token
from tests.integration.order_helpers import client_id

# The pages each person must reach by links alone (the walk really walks).
EXPECTED = {
    "vendedor1": {"/orders/new", "/orders", "/account"},
    "vendedor2": {"/orders/new", "/orders"},
    "laura": {"/credit/queue", "/credit/decided"},
    "sergio": {"/warehouse"},
    "marta": {"/ops", "/admin/dead-letters", "/admin/dead-letters/groups", "/credit/queue", "/admin/users"},
}


@pytest.fixture
def morning(client, auth, db) -> dict:
    return morning_with_everything(client, auth, db)


def test_the_reader_sees_text_and_shown_attributes_but_not_codes_in_data_attributes():
    html = (
        '<p data-order-status="PENDIENTE_AUTORIZACION" title="Ayuda">Esperando <b>crédito</b></p>'
        '<script>var x = {"a": 1};</script><input type="hidden" name="request_id" value="x_y">'
        '<input type="submit" value="Confirmar"><details data-technical><summary>Detalle técnico</summary>'
        '<pre>HTTP 503: {"detail": "x"}</pre></details>'
    )
    assert visible_text(html) == "Ayuda Esperando crédito Confirmar Detalle técnico"
    assert developer_language(html) == {}
    assert developer_language("<p>Estado: PENDIENTE_AUTORIZACION (insufficient_stock), RN-02</p>").keys() == {
        "an enum",
        "a snake_case code",
        "a rule or ADR number",
    }


@pytest.mark.parametrize("user", USERS)
def test_every_page_a_person_reaches_speaks_plain_spanish(client, auth, morning, user):
    as_user(client, auth, user)
    pages = every_page(client, morning)
    leaks = {
        url: found
        for url, (status, html, _) in sorted(pages.items())
        if status == 200 and html and (found := developer_language(html))
    }
    reached = {url.split("?")[0] for url, (status, _, _) in pages.items() if status == 200}
    assert EXPECTED[user] <= reached, EXPECTED[user] - reached
    assert leaks == {}, f"{user} reads developer language: {leaks}"


def test_the_order_page_of_each_state_speaks_plain_spanish(client, auth, morning):
    as_user(client, auth, "marta")  # the owner reads every order, with the technical detail of a delivery error
    leaks = {}
    for order in morning["orders"]:
        html = page(client, f"/orders/{order}")
        assert "data-order-status=" in html
        if found := developer_language(html):
            leaks[order] = found
    assert leaks == {}


def test_a_refused_order_names_each_reason_in_words_and_keeps_the_code_for_tests(client, auth):
    as_user(client, auth, "vendedor1")
    html = page(client, "/orders/new")
    for lines, codes, words in [
        ([("COR-118", 2)], ["insufficient_stock"], "No hay stock suficiente"),
        ([("NOPE-1", 1), ("PRC-000", 1)], ["invalid_sku", "price_source_unavailable"], "no existe en el catálogo"),
    ]:
        response = client.post("/orders/new", data=form_data(html, PLATINO, lines))
        refused = response.get_data(as_text=True)
        assert response.status_code == 422
        for code in codes:
            assert f'data-reason="{code}"' in refused
        assert words in refused
        assert developer_language(refused) == {}
        assert request_id_of(refused) == request_id_of(html)


def test_a_form_used_for_another_order_says_so_in_words(client, auth):
    as_user(client, auth, "vendedor1")
    html = page(client, "/orders/new")
    assert client.post("/orders/new", data=form_data(html, PLATINO, [("TOR-010", 1)])).status_code == 303
    response = client.post("/orders/new", data=form_data(html, PLATINO, [("TOR-010", 2)]))
    conflict = response.get_data(as_text=True)
    assert response.status_code == 409 and "request_id_reused" in conflict
    assert developer_language(conflict) == {}


def test_a_delivery_error_is_a_sentence_and_its_raw_text_is_collapsed_for_admins(client, auth, morning):
    as_user(client, auth, "marta")
    html = page(client, f"/admin/dead-letters/{morning['dead_letter']['id']}")
    assert "El servicio fiscal respondió con un error (503): «servicio no disponible»." in html
    assert '<details class="technical" data-technical>' in html  # the raw answer, collapsed
    assert "$ 750,00" in visible_text(html)  # the event's amounts in pesos, not cents
    assert developer_language(html) == {}


def test_the_pages_a_refused_action_comes_back_to_speak_plain_spanish(client, auth, db, morning):
    shipped, cancelled, pending = morning["orders"][:3]
    as_user(client, auth, "vendedor1")
    answers = {"cancel again": cancel(client, cancelled)}
    as_user(client, auth, "sergio")
    answers["dispatch too much"] = dispatch(client, shipped, {"COR-200": "50"})
    as_user(client, auth, "laura")
    queue = page(client, "/credit/queue")
    answers["reject without a reason"] = client.post(
        f"/credit/queue/{pending}/reject", data={"csrf_token": csrf_token(queue), "reason": ""}
    )
    platino = client_id(db, PLATINO)
    fields = form_fields(page(client, f"/clients/{platino}"), "data-payment-form")
    answers["pay more than owed"] = client.post(
        f"/clients/{platino}/payments", data={**fields, "amount": "99.999.999,00", "reference": "recibo 1"}
    )
    statuses = {what: response.status_code for what, response in answers.items()}
    assert statuses == {"cancel again": 409, "dispatch too much": 422, "reject without a reason": 400, "pay more than owed": 422}
    leaks = {what: found for what, response in answers.items() if (found := developer_language(response.get_data(as_text=True)))}
    assert leaks == {}
