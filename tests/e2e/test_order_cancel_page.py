"""POST /orders/<id>/cancel from the order page (guarantee 19): who may, what it says, and every refusal keeping nothing."""

from __future__ import annotations

import re

import pytest

from nexo.orders import dispatch
from tests.e2e.lifecycle_support import (
    PLATINO,
    as_user,
    books_hold,
    cancel,
    enter,
    expired_csrf_token,
    page,
    snapshot,
)
from tests.e2e.test_credit_queue import hidden
from tests.integration.order_helpers import exposure, stock, user_id


def test_the_salesperson_cancels_a_confirmed_order_and_is_told_what_was_released_and_given_back(client, auth, db):
    before = exposure(db, "Corralón del Sur")
    order_id = enter(client, auth, [("COR-200", 3), ("TOR-010", 10)])
    assert "data-cancel-form" in page(client, f"/orders/{order_id}")

    response = cancel(client, order_id, "el cliente llamó: ya no lo quiere")

    assert response.status_code == 303 and response.headers["Location"].endswith(f"/orders/{order_id}")
    html = page(client, f"/orders/{order_id}")
    flash = re.search(r'<p class="flash[^"]*" role="status">(.*?)</p>', html, re.S).group(1)
    assert "Pedido anulado" in flash and "3 × COR-200 y 10 × TOR-010" in flash and "$ 11.100,00" in flash
    assert 'data-order-status="ANULADO"' in html and ">Anulado<" in html
    assert "el cliente llamó: ya no lo quiere" in html and "data-cancel-form" not in html
    assert stock(db, "COR-200") == {"on_hand": 500, "reserved": 0}
    assert exposure(db, "Corralón del Sur") == before
    books_hold(db)


@pytest.mark.parametrize("officer", ["laura", "marta"])
def test_credit_and_the_owner_cancel_any_order_a_pending_one_gives_back_no_credit(client, auth, db, officer):
    before = exposure(db, PLATINO)
    order_id = enter(client, auth, [("CAB-045", 2)], client_name=PLATINO)  # over Platino's limit: it waits
    as_user(client, auth, officer)
    assert "data-cancel-form" in page(client, f"/orders/{order_id}")

    response = cancel(client, order_id, "pedido duplicado")

    assert response.status_code == 303
    html = page(client, f"/orders/{order_id}")
    assert "No había crédito que devolver" in html and "2 × CAB-045" in html
    assert stock(db, "CAB-045") == {"on_hand": 40, "reserved": 0} and exposure(db, PLATINO) == before
    books_hold(db)


def test_the_form_is_offered_only_while_the_order_is_cancellable(client, auth, db):
    order_id = enter(client, auth, [("COR-200", 2)])
    dispatch.dispatch_order(
        db, dispatch.DispatchOrder(order_id, user_id(db, "sergio"), "sergio", (dispatch.ShipLine("COR-200", 1),))
    )
    html = page(client, f"/orders/{order_id}")
    assert 'data-order-status="DESPACHADO_PARCIAL"' in html and "data-cancel-form" not in html


@pytest.mark.parametrize("who", ["vendedor2", "sergio"])
def test_someone_elses_order_is_404_and_left_as_it_is(client, auth, db, who):
    order_id = enter(client, auth, [("COR-200", 2)])
    as_user(client, auth, who)
    before = snapshot(db)
    assert client.get(f"/orders/{order_id}").status_code == 404
    assert cancel(client, order_id).status_code == 404
    assert cancel(client, order_id, reason="").status_code == 404  # a bad form does not tell it exists either
    assert snapshot(db) == before


@pytest.mark.parametrize(
    "reason",
    ["", "   ", "\r\n\t", "sin\x00motivo", "sin\x1bmotivo", "sin\x7fmotivo", "sin\x85motivo", "x" * 501],
)
def test_an_empty_or_malformed_reason_is_a_400_with_the_form_again_and_nothing_changed(client, auth, db, reason):
    order_id = enter(client, auth, [("COR-200", 2)])
    before = snapshot(db)
    response = cancel(client, order_id, reason)
    html = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "data-cancel-form" in html and 'data-field-error="reason"' in html and 'data-order-status="CONFIRMADO"' in html
    assert snapshot(db) == before


def test_a_reason_keeps_its_line_breaks(client, auth, db):
    order_id = enter(client, auth, [("COR-200", 2)])
    assert cancel(client, order_id, "llamó el cliente\r\n\tno lo necesita").status_code == 303


def test_cancelling_twice_is_a_409_and_releases_nothing_twice(client, auth, db):
    order_id = enter(client, auth, [("COR-200", 5)])
    assert cancel(client, order_id).status_code == 303
    after_first = snapshot(db)
    again = cancel(client, order_id)
    assert again.status_code == 409 and 'data-reason="order_not_cancellable"' in again.get_data(as_text=True)
    assert snapshot(db) == after_first
    books_hold(db)


def test_rejected_and_dispatched_orders_are_409_not_cancellable_and_nothing_changes(client, auth, db):
    rejected = enter(client, auth, [("CAB-045", 2)], client_name=PLATINO)
    shipped = enter(client, auth, [("COR-200", 2)])
    as_user(client, auth, "laura")
    queue = page(client, "/credit/queue")
    client.post(
        f"/credit/queue/{rejected}/reject",
        data={"csrf_token": hidden(queue, "csrf_token"), "reason": "sin crédito"},
    )
    dispatch.dispatch_order(db, dispatch.DispatchOrder(shipped, user_id(db, "sergio"), "sergio"))
    before = snapshot(db)
    for order_id in (rejected, shipped):
        response = cancel(client, order_id)
        assert response.status_code == 409, order_id
        html = response.get_data(as_text=True)
        assert 'data-reason="order_not_cancellable"' in html and "order_not_cancellable" not in re.sub(r"<[^>]+>", "", html)
    assert snapshot(db) == before


def test_an_expired_csrf_token_is_a_400_and_nothing_changes(app, client, auth, db):
    order_id = enter(client, auth, [("COR-200", 2)])
    before = snapshot(db)
    response = client.post(
        f"/orders/{order_id}/cancel", data={"csrf_token": expired_csrf_token(app, client), "reason": "ya no lo quiere"}
    )
    assert response.status_code == 400 and "venció" in response.get_data(as_text=True)
    assert client.post(f"/orders/{order_id}/cancel", data={"reason": "sin token"}).status_code == 400
    assert snapshot(db) == before


def test_anonymous_goes_to_login(client, auth, db):
    order_id = enter(client, auth, [("COR-200", 1)])
    auth.logout()
    response = client.post(f"/orders/{order_id}/cancel", data={"reason": "x"})
    assert response.status_code in (302, 400)  # CSRF first (400), or the login page (302): never a cancel
    assert page_status(db, order_id) == "CONFIRMADO"


def page_status(db, order_id) -> str:
    with db.reading() as conn:
        return conn.execute("SELECT status FROM orders WHERE id = %s", [order_id]).fetchone()["status"]
