"""The order pages through the Flask app: the form, every outcome's status code, and what the pages show."""

from __future__ import annotations

import re
import uuid

import pytest

from nexo.orders.service import create_order
from tests.e2e.order_forms import form_data, order_id_from, request_id_of
from tests.integration.order_helpers import command, count


def open_form(client, path="/orders/new"):
    response = client.get(path)
    assert response.status_code == 200
    return response.get_data(as_text=True)


def post_order(client, client_name="Corralón del Sur", lines=(("COR-200", 3),), **extra):
    html = open_form(client)
    data = form_data(html, client_name, lines, **extra)
    return client.post("/orders/new", data=data), data


# --- the form -------------------------------------------------------------------------------------


def test_form_offers_clients_warehouses_five_rows_and_the_catalog_with_server_prices(client, auth):
    auth.login("vendedor1")
    html = open_form(client)
    assert re.search(r'<option value="[0-9a-f-]{36}"[^>]*>Obras Rápidas SRL · Regular', html)
    assert re.search(r'<option value="[0-9a-f-]{36}"[^>]*>Ferretería Platino SA · Platino', html)
    assert '<option value="CEN"' in html and '<option value="NOR"' in html
    assert all(f'name="lines-{i}-sku"' in html and f'name="lines-{i}-quantity"' in html for i in range(5))
    assert 'name="delivery_method"' in html
    assert re.search(r'<button type="submit"[^>]*data-disable-on-submit', html)
    cor118 = re.search(r'<tr data-catalog-sku="COR-118">(.*?)</tr>', html, re.S).group(1)
    assert "$ 12.500,00" in cor118 and 'data-available="CEN">1<' in cor118 and 'data-available="NOR">0<' in cor118
    prc = re.search(r'<tr data-catalog-sku="PRC-000">(.*?)</tr>', html, re.S).group(1)
    assert "sin precio" in prc


def test_more_rows_are_available_without_javascript(client, auth):
    auth.login("vendedor1")
    html = open_form(client, "/orders/new?rows=10")
    assert 'name="lines-9-sku"' in html and 'name="lines-10-sku"' not in html
    assert "orders.js" in html and "data-add-line" in html


def test_each_opening_of_the_form_has_a_new_request_id(client, auth):
    auth.login("vendedor1")
    first, second = request_id_of(open_form(client)), request_id_of(open_form(client))
    assert first != second and uuid.UUID(first) and uuid.UUID(second)


def test_people_without_orders_create_cannot_open_the_form(client, auth):
    auth.login("laura")
    assert client.get("/orders/new").status_code == 403


# --- outcomes ---------------------------------------------------------------------------------------


def test_new_order_redirects_303_to_the_order_page_showing_its_state(client, auth):
    auth.login("vendedor1")
    response, _ = post_order(client)
    assert response.status_code == 303
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert 'data-order-status="CONFIRMADO"' in page
    assert 'data-billing-status="PENDIENTE_FACTURACION"' in page
    assert re.search(r'data-event-type="order.handoff_requested" data-event-status="PENDIENTE"', page)
    assert re.search(r'data-event-type="billing.intent_recorded" data-event-status="PENDIENTE"', page)
    assert 'data-notice="already_registered"' not in page
    assert order_id_from(response.headers["Location"])


def test_resubmitting_the_same_form_shows_the_original_order_with_a_notice(client, auth, db):
    auth.login("vendedor1")
    response, data = post_order(client, lines=[("CAB-045", 40)])
    again = client.post("/orders/new", data=data)
    assert again.status_code == 303 and again.headers["Location"] == response.headers["Location"]
    page = client.get(again.headers["Location"]).get_data(as_text=True)
    assert 'data-notice="already_registered"' in page
    assert count(db, "SELECT count(*) FROM orders") == 1


def test_resubmitting_with_lower_case_reordered_lines_is_still_a_replay(client, auth, db):
    auth.login("vendedor1")
    response, data = post_order(client, lines=[("COR-200", 1), ("TOR-010", 5)])
    data.update({"lines-0-sku": " tor-010", "lines-0-quantity": "5", "lines-1-sku": "cor-200 ", "lines-1-quantity": "1"})
    again = client.post("/orders/new", data=data)
    assert again.status_code == 303 and again.headers["Location"] == response.headers["Location"]
    assert count(db, "SELECT count(*) FROM orders") == 1


@pytest.mark.parametrize("change", [{"lines-0-quantity": "4"}, {"deposit_id": "NOR"}, {"client": "Obras Rápidas SRL"}])
def test_same_request_id_with_other_content_is_409_request_id_reused(client, auth, db, change):
    auth.login("vendedor1")
    html = open_form(client)
    data = form_data(html, "Corralón del Sur", [("COR-200", 3)])
    assert client.post("/orders/new", data=data).status_code == 303
    other = dict(data)
    if "client" in change:
        other["client_id"] = form_data(html, change["client"], [])["client_id"]
    else:
        other.update(change)
    response = client.post("/orders/new", data=other)
    assert response.status_code == 409
    page = response.get_data(as_text=True)
    assert "request_id_reused" in page and "formulario nuevo" in page
    assert count(db, "SELECT count(*) FROM orders") == 1


def test_business_rejection_is_422_with_the_same_request_id_and_a_reason_per_line(client, auth, db):
    auth.login("vendedor1")
    response, data = post_order(client, lines=[("COR-118", 2), ("PRC-000", 1), ("NOPE-1", 1)])
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert request_id_of(page) == data["request_id"]
    assert re.findall(r'data-reason="(\w+)"', page) == [
        "insufficient_stock",
        "price_source_unavailable",
        "invalid_sku",
    ]  # every line in one round (ADR-021)
    assert 'value="NOPE-1"' in page  # the salesperson's lines are kept
    assert count(db, "SELECT count(*) FROM idempotency_keys") == 0


def test_insufficient_stock_is_422_and_the_same_form_succeeds_after_stock_arrives(client, auth, db):
    auth.login("vendedor1")
    response, data = post_order(client, lines=[("COR-118", 2), ("CAB-045", 41), ("TOR-010", 1)])
    assert response.status_code == 422
    assert re.findall(r'data-reason="(\w+)" data-sku="([\w-]+)"', response.get_data(as_text=True)) == [
        ("insufficient_stock", "COR-118"),
        ("insufficient_stock", "CAB-045"),
    ]
    with db.transaction() as tx:
        tx.execute("UPDATE stock_level SET on_hand = on_hand + 5 WHERE warehouse_id = 'CEN'")
        tx.commit()
    assert client.post("/orders/new", data=data).status_code == 303


# --- malformed input: 400 with field errors, nothing persisted, never a 500 -----------------------------

MALFORMED = {
    "no lines": ({}, [], "lines"),
    "zero": ({}, [("COR-200", "0")], "line"),
    "negative": ({}, [("COR-200", "-3")], "line"),
    "decimal": ({}, [("COR-200", "1.5")], "line"),
    "text": ({}, [("COR-200", "dos")], "line"),
    "absurd": ({}, [("COR-200", "100001")], "line"),
    "huge": ({}, [("COR-200", "9" * 5000)], "line"),
    "leading zeros": ({}, [("COR-200", "0" * 30)], "line"),
    "sku without quantity": ({}, [("COR-200", "")], "line"),
    "quantity without sku": ({}, [("", "3")], "line"),
    "duplicate after normalising": ({}, [("COR-200", "1"), (" cor-200", "2")], "line"),
    "unknown client": ({"client_id": str(uuid.uuid4())}, [("COR-200", "1")], "client_id"),
    "client not a uuid": ({"client_id": "Corralón"}, [("COR-200", "1")], "client_id"),
    "unknown warehouse": ({"deposit_id": "XXX"}, [("COR-200", "1")], "deposit_id"),
    "bad request id": ({"request_id": "not-a-uuid"}, [("COR-200", "1")], "request_id"),
    "missing request id": ({"request_id": ""}, [("COR-200", "1")], "request_id"),
}


@pytest.mark.parametrize("overrides, lines, field", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_form_is_400_with_field_errors_and_persists_nothing(client, auth, db, overrides, lines, field):
    auth.login("vendedor1")
    html = open_form(client)
    data = {**form_data(html, "Corralón del Sur", lines), **overrides}
    response = client.post("/orders/new", data=data)
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    if field == "line":
        assert "data-line-error" in page
    else:
        assert f'data-field-error="{field}"' in page
    assert count(db, "SELECT count(*) FROM orders") + count(db, "SELECT count(*) FROM idempotency_keys") == 0


def test_too_many_rows_is_400(client, auth):
    auth.login("vendedor1")
    html = open_form(client)
    data = form_data(html, "Corralón del Sur", [(f"SKU-{i}", 1) for i in range(51)])
    response = client.post("/orders/new", data=data)
    assert response.status_code == 400 and 'data-field-error="lines"' in response.get_data(as_text=True)


def test_post_without_csrf_token_is_400(client, auth):
    auth.login("vendedor1")
    data = form_data(open_form(client), "Corralón del Sur", [("COR-200", 1)])
    del data["csrf_token"]
    assert client.post("/orders/new", data=data).status_code == 400


# --- the order page ---------------------------------------------------------------------------------


def _order_page(client, order_id):
    response = client.get(f"/orders/{order_id}")
    assert response.status_code == 200
    return response.get_data(as_text=True)


def test_pending_order_page_says_it_is_not_confirmed_and_names_the_open_questions(client, auth, db):
    result = create_order(db, command(db, [("COR-118", 1)], client="Ferretería Platino SA"))
    auth.login("vendedor1")
    page = _order_page(client, result.order_id)
    assert 'data-order-status="PENDIENTE_AUTORIZACION"' in page and 'data-billing-status="NO_APLICA"' in page
    assert "NO está confirmado" in page and "la disponibilidad puede" in page
    assert 'data-open-question="RN-02"' in page
    assert 'data-open-question="RN-07"' in page and "sin vencimiento: todavía no está decidido cuánto dura" in page
    assert "data-event-type" not in page


def test_order_page_shows_lines_prices_total_reservations_and_delivery_details(client, auth, db):
    result = create_order(db, command(db, [("COR-200", 2), ("TOR-010", 10)], delivery_method="envío a obra"))
    with db.transaction() as tx:  # what the relay and the dead-letter admin record (their code, our reading)
        tx.execute(
            "UPDATE orders SET invoice_number = 'A-0001-00000042', handoff_ticket = 'DEP-77' WHERE id = %s", [result.order_id]
        )
        tx.execute(
            "UPDATE outbox_event SET status = 'FALLIDO', attempts = 8, last_error = 'HTTP 422: {\"detail\": \"CUIT rechazado\"}'"
            " WHERE aggregate_id = %s AND event_type = 'billing.intent_recorded'",
            [result.order_id],
        )
        tx.execute(
            "INSERT INTO dead_letter (event_id, destination, status, attempts, error_signature, first_failed_at,"
            " last_failed_at, resolved_at, resolved_by, resolution_note)"
            " SELECT id, 'fiscal', 'discarded', 8, 'fiscal:422', now(), now(), now(), 'marta', 'factura manual'"
            " FROM outbox_event WHERE aggregate_id = %s AND event_type = 'billing.intent_recorded'",
            [result.order_id],
        )
        tx.commit()
    auth.login("vendedor1")
    page = _order_page(client, result.order_id)
    assert "$ 3.200,00" in page and "$ 6.400,00" in page and "$ 7.900,00" in page
    assert 'data-reservation-kind="FIRME"' in page and "envío a obra" in page
    assert "A-0001-00000042" in page and "DEP-77" in page
    assert re.search(r'data-event-type="billing.intent_recorded" data-event-status="FALLIDO"', page)
    assert "intentos: 8" in page and "El servicio fiscal rechazó el aviso (422): «CUIT rechazado»." in page
    assert "descartado por marta: factura manual" in page


def test_order_page_shows_the_credit_decision(client, auth, db):
    result = create_order(db, command(db, [("COR-118", 1)], client="Ferretería Platino SA"))
    with db.transaction() as tx:
        tx.execute(
            "UPDATE orders SET status = 'CONFIRMADO', decided_at = now(), decision_note = 'cliente de siempre',"
            " decided_by = (SELECT id FROM app_user WHERE username = 'laura') WHERE id = %s",
            [result.order_id],
        )
        tx.execute(
            "INSERT INTO audit_log (actor, action, object_type, object_id) VALUES ('laura', 'credit.approved', 'order', %s)",
            [str(result.order_id)],
        )
        tx.commit()
    auth.login("vendedor1")
    page = _order_page(client, result.order_id)
    assert "data-credit-decision" in page and "Laura (crédito)" in page and "cliente de siempre" in page
    assert 'data-audit-action="credit.approved"' in page


@pytest.mark.parametrize(
    "user, status", [("vendedor1", 200), ("laura", 200), ("marta", 200), ("vendedor2", 404), ("sergio", 404)]
)
def test_order_page_is_for_its_salesperson_credit_and_admins_only(client, auth, db, user, status):
    result = create_order(db, command(db, [("COR-200", 1)], salesperson="vendedor1"))
    auth.login(user)
    assert client.get(f"/orders/{result.order_id}").status_code == status


def test_unknown_order_is_404_and_anonymous_visitors_go_to_login(client, auth):
    assert client.get(f"/orders/{uuid.uuid4()}").status_code == 302
    auth.login("vendedor1")
    assert client.get(f"/orders/{uuid.uuid4()}").status_code == 404


def test_my_orders_lists_only_my_own_newest_first(client, auth, db):
    older = create_order(db, command(db, [("COR-200", 1)], salesperson="vendedor1"))
    create_order(db, command(db, [("TOR-010", 1)], salesperson="vendedor2"))
    newer = create_order(db, command(db, [("COR-118", 1)], client="Ferretería Platino SA", salesperson="vendedor1"))
    auth.login("vendedor1")
    page = client.get("/orders").get_data(as_text=True)
    assert re.findall(r'data-order-row="([0-9a-f-]{36})"', page) == [str(newer.order_id), str(older.order_id)]
    assert "Ferretería Platino SA" in page and "$ 12.500,00" in page
