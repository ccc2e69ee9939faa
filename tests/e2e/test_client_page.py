"""A client's account (guarantee 19): GET /clients/<id>, payments and limit changes from it, and the credit queue's
link to it and its word when a payment since the order brought the client back under its limit."""

from __future__ import annotations

import re
import uuid

import pytest

from nexo.credit.payments import RecordPayment, record_payment
from tests.e2e.lifecycle_support import (
    CORRALON,
    PLATINO,
    as_user,
    attr,
    books_hold,
    cancel,
    enter,
    expired_csrf_token,
    page,
    snapshot,
)
from tests.e2e.test_credit_queue import approve_data, row_of
from tests.helpers import csrf_token
from tests.integration.order_helpers import client_id, count, exposure, user_id

OWED = 99_000_000  # Platino's exposure in the Nexo morning: 990,000.00


def form_fields(html: str, marker: str) -> dict:
    """The hidden and text fields of the form carrying `marker` (data-payment-form, data-limit-form)."""
    start = html.index(marker)
    form = html[start : html.index("</form>", start)]
    return {**dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form)), "csrf_token": csrf_token(html)}


def pay(client, client_uuid, amount: str, reference: str = "transferencia 0001", **extra):
    fields = form_fields(page(client, f"/clients/{client_uuid}"), "data-payment-form")
    return client.post(f"/clients/{client_uuid}/payments", data={**fields, "amount": amount, "reference": reference, **extra})


def set_limit(client, client_uuid, limit: str, reason: str = "aumento acordado con Marta"):
    fields = form_fields(page(client, f"/clients/{client_uuid}"), "data-limit-form")
    return client.post(f"/clients/{client_uuid}/limit", data={**fields, "limit": limit, "reason": reason})


def test_credit_sees_the_figures_open_orders_payments_and_decisions(client, auth, db):
    platino = client_id(db, PLATINO)
    pending = enter(client, auth, [("CAB-045", 2)], client_name=PLATINO)
    confirmed = enter(client, auth, [("COR-200", 1)], client_name=PLATINO)  # 3,200 fits the 10,000 left
    cancelled = enter(client, auth, [("TOR-010", 1)], client_name=PLATINO)
    assert cancel(client, cancelled).status_code == 303
    record_payment(db, RecordPayment(platino, 50_000_00, "recibo 17", user_id(db, "laura"), "laura"))
    as_user(client, auth, "laura")

    html = page(client, f"/clients/{platino}")

    assert attr(html, "data-credit-limit-cents") == "100000000"
    assert attr(html, "data-exposure-cents") == str(OWED + 320_000 - 50_000_00)
    assert attr(html, "data-available-cents") == str(100_000_000 - (OWED + 320_000 - 50_000_00))
    assert re.findall(r'<tr data-order-id="([0-9a-f-]{36})"', html) == [confirmed, pending]  # open ones, newest first
    assert cancelled not in html
    assert len(re.findall(r"data-payment-id=", html)) == 1 and "recibo 17" in html and "$ 50.000,00" in html
    assert re.findall(r'data-decision-kind="([a-z_]+)"', html) == ["payment"]
    assert "data-payment-form" in html and "data-limit-form" in html


def test_the_owner_reads_the_account_without_its_forms_and_cannot_post_them(client, auth, db):
    platino = client_id(db, PLATINO)
    as_user(client, auth, "marta")
    html = page(client, f"/clients/{platino}")
    assert "data-read-only" in html and "data-payment-form" not in html and "data-limit-form" not in html
    token = csrf_token(html)
    before = snapshot(db)
    data = {"csrf_token": token, "amount": "1,00", "reference": "x", "limit": "1,00", "reason": "x"}
    assert client.post(f"/clients/{platino}/payments", data=data).status_code == 403
    assert client.post(f"/clients/{platino}/limit", data=data).status_code == 403
    assert snapshot(db) == before


@pytest.mark.parametrize("who", ["vendedor1", "sergio"])
def test_salespeople_and_the_warehouse_may_not_open_it(client, auth, db, who):
    as_user(client, auth, who)
    assert client.get(f"/clients/{client_id(db, PLATINO)}").status_code == 403


def test_an_unknown_client_is_404(client, auth, db):
    as_user(client, auth, "laura")
    assert client.get(f"/clients/{uuid.uuid4()}").status_code == 404
    token = csrf_token(page(client, "/credit/queue"))
    data = {"csrf_token": token, "amount": "1,00", "reference": "r", "limit": "1,00", "reason": "r"}
    assert client.post(f"/clients/{uuid.uuid4()}/payments", data=data).status_code == 404
    assert client.post(f"/clients/{uuid.uuid4()}/limit", data=data).status_code == 404


@pytest.mark.parametrize(("amount", "cents"), [("1.234,56", 123_456), ("1234,56", 123_456), ("$ 50", 5_000), ("0,5", 50)])
def test_a_payment_written_as_people_write_pesos_lowers_the_exposure_once(client, auth, db, amount, cents):
    platino = client_id(db, PLATINO)
    as_user(client, auth, "laura")
    response = pay(client, platino, amount, "transferencia 0001")
    assert response.status_code == 303 and response.headers["Location"].endswith(f"/clients/{platino}")
    assert exposure(db, PLATINO) == OWED - cents
    html = page(client, f"/clients/{platino}")
    assert "Pago de" in html and "registrado" in html and 'data-decision-kind="payment"' in html
    assert count(db, "SELECT count(*) FROM audit_log WHERE action = 'client.payment_recorded'") == 1
    books_hold(db)


def test_the_same_payment_form_sent_twice_is_one_payment(client, auth, db):
    platino = client_id(db, PLATINO)
    as_user(client, auth, "laura")
    fields = form_fields(page(client, f"/clients/{platino}"), "data-payment-form")
    data = {**fields, "amount": "1.000,00", "reference": "recibo 9"}
    assert client.post(f"/clients/{platino}/payments", data=data).status_code == 303
    assert client.post(f"/clients/{platino}/payments", data=data).status_code == 303  # a double click, a lost answer
    assert count(db, "SELECT count(*) FROM payment") == 1 and exposure(db, PLATINO) == OWED - 100_000
    assert "ya estaba registrado" in page(client, f"/clients/{platino}")
    books_hold(db)


def test_a_payment_over_the_exposure_is_a_422_with_the_form_again_and_nothing_changed(client, auth, db):
    obras = client_id(db, "Obras Rápidas SRL")  # owes nothing
    as_user(client, auth, "laura")
    before = snapshot(db)
    response = pay(client, obras, "0,01")
    html = response.get_data(as_text=True)
    assert response.status_code == 422
    assert 'data-reason="payment_exceeds_exposure"' in html and "data-payment-form" in html and 'value="0,01"' in html
    assert snapshot(db) == before


@pytest.mark.parametrize(
    "amount",
    ["", "0", "0,00", "-5", "−5", "1,234.56", "1234.56", "12,345", "1 234", "1.23", "abc", "١٢", "1e3", "12\x00", "9" * 30],
)
def test_a_malformed_amount_is_a_400_with_the_form_again_and_nothing_changed(client, auth, db, amount):
    platino = client_id(db, PLATINO)
    as_user(client, auth, "laura")
    before = snapshot(db)
    response = pay(client, platino, amount)
    html = response.get_data(as_text=True)
    assert response.status_code == 400, html[:300]
    assert 'data-field-error="amount"' in html and "data-payment-form" in html
    assert snapshot(db) == before


@pytest.mark.parametrize("reference", ["", "   ", "recibo\x00", "recibo\x1b9", "r" * 201])
def test_an_empty_or_malformed_reference_is_a_400_and_nothing_changed(client, auth, db, reference):
    platino = client_id(db, PLATINO)
    as_user(client, auth, "laura")
    before = snapshot(db)
    response = pay(client, platino, "100,00", reference)
    assert response.status_code == 400 and 'data-field-error="reference"' in response.get_data(as_text=True)
    assert snapshot(db) == before


def test_a_limit_change_is_audited_and_shown_among_the_decisions(client, auth, db):
    obras = client_id(db, "Obras Rápidas SRL")
    as_user(client, auth, "laura")
    response = set_limit(client, obras, "75.000,00", "compra anual acordada")
    assert response.status_code == 303
    html = page(client, f"/clients/{obras}")
    assert attr(html, "data-credit-limit-cents") == "7500000"
    assert "Límite de crédito cambiado de $ 50.000,00 a $ 75.000,00" in html
    decision = re.search(r'<li data-decision-kind="limit_changed".*?</li>', html, re.S).group(0)
    assert "$ 50.000,00" in decision and "$ 75.000,00" in decision and "compra anual acordada" in decision
    assert count(db, "SELECT count(*) FROM audit_log WHERE action = 'client.limit_changed'") == 1
    assert set_limit(client, obras, "0", "solo contado").status_code == 303  # no credit at all is a limit too
    books_hold(db)


@pytest.mark.parametrize(
    ("limit", "reason", "field"),
    [("-1", "r", "limit"), ("1,234.56", "r", "limit"), ("1,001", "r", "limit"), ("", "r", "limit"), ("100", "", "reason"),
     ("100", "  ", "reason"), ("100", "por\x00que", "reason")],
)  # fmt: skip
def test_a_malformed_limit_or_no_reason_is_a_400_and_nothing_changed(client, auth, db, limit, reason, field):
    obras = client_id(db, "Obras Rápidas SRL")
    as_user(client, auth, "laura")
    before = snapshot(db)
    response = set_limit(client, obras, limit, reason)
    assert response.status_code == 400 and f'data-field-error="{field}"' in response.get_data(as_text=True)
    assert snapshot(db) == before


def test_an_expired_csrf_token_is_a_400_and_nothing_changes(app, client, auth, db):
    platino = client_id(db, PLATINO)
    as_user(client, auth, "laura")
    before = snapshot(db)
    fields = form_fields(page(client, f"/clients/{platino}"), "data-payment-form")
    data = {**fields, "amount": "10,00", "reference": "r", "csrf_token": expired_csrf_token(app, client)}
    assert client.post(f"/clients/{platino}/payments", data=data).status_code == 400
    assert client.post(f"/clients/{platino}/limit", data={**data, "limit": "1", "reason": "r"}).status_code == 400
    assert snapshot(db) == before


# --- the credit queue -------------------------------------------------------------------------------


def test_each_queue_card_links_its_client_and_says_when_a_payment_since_brought_it_back_under_its_limit(client, auth, db):
    platino = client_id(db, PLATINO)
    order_id = enter(client, auth, [("CAB-045", 2)], client_name=PLATINO)  # 17,800 over the 10,000 left
    as_user(client, auth, "laura")
    card = row_of(page(client, "/credit/queue"), order_id)
    assert f'href="/clients/{platino}"' in card and "data-paid-since-cents" not in card

    assert pay(client, platino, "5.000,00").status_code == 303  # not enough: still over
    card = row_of(page(client, "/credit/queue"), order_id)
    assert attr(card, "data-paid-since-cents") == "500000" and "data-back-under-limit" not in card

    assert pay(client, platino, "3.000,00", "recibo 2").status_code == 303  # 990,000 - 8,000 + 17,800 ≤ 1,000,000
    queue = page(client, "/credit/queue")
    card = row_of(queue, order_id)
    assert attr(card, "data-paid-since-cents") == "800000" and "data-back-under-limit" in card
    assert "La decisión sigue siendo de Crédito" in card
    # Laura still decides: nothing was approved on its own, and her approval goes through as usual.
    assert order_status(db, order_id) == "PENDIENTE_AUTORIZACION"
    assert client.post(f"/credit/queue/{order_id}/approve", data=approve_data(queue, order_id)).status_code == 303
    books_hold(db)


def test_a_payment_before_the_order_is_not_news_on_its_card(client, auth, db):
    platino = client_id(db, PLATINO)
    record_payment(db, RecordPayment(platino, 1_000_00, "anterior", user_id(db, "laura"), "laura"))
    order_id = enter(client, auth, [("CAB-045", 2)], client_name=PLATINO)
    as_user(client, auth, "laura")
    assert "data-paid-since-cents" not in row_of(page(client, "/credit/queue"), order_id)


def order_status(db, order_id) -> str:
    with db.reading() as conn:
        return conn.execute("SELECT status FROM orders WHERE id = %s", [order_id]).fetchone()["status"]


def test_the_order_page_links_the_client_only_for_who_may_open_it(client, auth, db):
    order_id = enter(client, auth, [("COR-200", 1)], client_name=CORRALON)
    assert "data-client-link" not in page(client, f"/orders/{order_id}")  # the salesperson has no clients.view
    for who in ("laura", "marta"):
        as_user(client, auth, who)
        link = re.search(r'href="(/clients/[0-9a-f-]{36})" data-client-link', page(client, f"/orders/{order_id}")).group(1)
        assert client.get(link).status_code == 200


def test_the_owner_reads_the_queue_without_its_buttons_and_reaches_the_account_from_it(client, auth, db):
    order_id = enter(client, auth, [("CAB-045", 2)], client_name=PLATINO)
    as_user(client, auth, "marta")
    card = row_of(page(client, "/credit/queue"), order_id)
    assert "/approve" not in card and "/reject" not in card
    assert client.get(re.search(r'href="(/clients/[0-9a-f-]{36})"', card).group(1)).status_code == 200
    assert client.get("/credit/decided").status_code == 200
    as_user(client, auth, "vendedor1")
    assert client.get("/credit/queue").status_code == 403
