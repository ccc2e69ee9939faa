"""The order pages through the Flask app: the form, every outcome's status code, and what the pages show."""

from __future__ import annotations

import re

from tests.e2e.order_forms import form_data, order_id_from, request_id_of


def open_form(client, path="/orders/new"):
    response = client.get(path)
    assert response.status_code == 200
    return response.get_data(as_text=True)


def test_new_order_redirects_303_to_the_order_page_showing_its_state(client, auth):
    auth.login("vendedor1")
    html = open_form(client)
    response = client.post("/orders/new", data=form_data(html, "Corralón del Sur", [("COR-200", 3)]))
    assert response.status_code == 303
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert 'data-order-status="CONFIRMADO"' in page
    assert 'data-billing-status="PENDIENTE_FACTURACION"' in page
    assert 'data-event-type="order.handoff_requested"' in page
    assert 'data-event-type="billing.intent_recorded"' in page
    assert order_id_from(response.headers["Location"])


def test_resubmitting_the_same_form_shows_the_original_order_with_a_notice(client, auth):
    auth.login("vendedor1")
    html = open_form(client)
    data = form_data(html, "Corralón del Sur", [("CAB-045", 40)])
    first = client.post("/orders/new", data=data)
    second = client.post("/orders/new", data=data)
    assert second.status_code == 303
    assert second.headers["Location"] == first.headers["Location"]
    page = client.get(second.headers["Location"]).get_data(as_text=True)
    assert 'data-notice="already_registered"' in page


def test_each_opening_of_the_form_has_a_new_request_id(client, auth):
    auth.login("vendedor1")
    assert request_id_of(open_form(client)) != request_id_of(open_form(client))


def test_business_rejection_is_422_with_the_same_request_id_and_a_reason_per_line(client, auth):
    auth.login("vendedor1")
    html = open_form(client)
    data = form_data(html, "Corralón del Sur", [("COR-118", 2), ("PRC-000", 1), ("NOPE-1", 1)])
    response = client.post("/orders/new", data=data)
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert request_id_of(page) == data["request_id"]
    assert re.findall(r'data-reason="(\w+)"', page) == ["price_source_unavailable", "invalid_sku"]
