"""GET /warehouse: Sergio sees the handoffs the warehouse system accepted and still to prepare, oldest first, of
one deposit or all (permission warehouse.view)."""

from __future__ import annotations

import re

import pytest

from nexo.outbox.wakeup import request_delivery
from tests.e2e.lifecycle_support import CORRALON, as_user, dispatch, page, received_by_warehouse
from tests.e2e.order_forms import form_data, order_id_from
from tests.relay_fixtures import event_rows, insert_confirmed_orders, relay_settings, wait_until


def test_anonymous_goes_to_login_and_a_salesperson_is_refused(client, auth):
    response = client.get("/warehouse")
    assert response.status_code == 302 and "/login" in response.headers["Location"]
    auth.login("vendedor1")
    assert client.get("/warehouse").status_code == 403


@pytest.mark.slow
def test_sergio_sees_the_ticket_client_and_lines_of_a_delivered_handoff(client, auth, db, redis_client, fakes, relay):
    relay.start_workers(1)
    delivered, waiting = insert_confirmed_orders(db, 2, sku="CAB-045", quantity=3)
    # A wake-up drains every due event (ADR-008): the waiting order's events are due only in an hour.
    with db.transaction() as tx:
        tx.execute(
            "UPDATE outbox_event SET next_attempt_at = now() + interval '1 hour' WHERE aggregate_id = %s", [waiting.order_id]
        )
        tx.commit()
    request_delivery([delivered.warehouse_event_id], connection=redis_client, settings=relay_settings())
    wait_until(
        lambda: event_rows(db, [delivered.warehouse_event_id])[str(delivered.warehouse_event_id)]["status"] == "ENTREGADO",
        timeout=30,
    )
    ticket = fakes.effects("warehouse")[0]["result"]["ticket"]

    auth.login("sergio")
    html = client.get("/warehouse").get_data(as_text=True)
    rows = re.findall(r'data-handoff-ticket="([^"]+)" data-order-id="([^"]+)"', html)
    assert rows == [(ticket, str(delivered.order_id))]  # the undelivered one is not there yet
    assert "Corralón del Sur" in html and 'data-handoff-line="CAB-045"' in html and "3 × CAB-045" in html
    assert "1 pedidos confirmados todavía están en camino" in html
    assert str(waiting.order_id) not in html


def _enter(client, auth, deposit: str) -> str:
    auth.logout()
    auth.login("vendedor1")
    html = client.get("/orders/new").get_data(as_text=True)
    response = client.post("/orders/new", data=form_data(html, CORRALON, [("TOR-010", 2)], deposit=deposit))
    assert response.status_code == 303, response.get_data(as_text=True)[:500]
    return order_id_from(response.headers["Location"])


def _listed(html: str) -> list[str]:
    return re.findall(r'data-handoff-ticket="[^"]+" data-order-id="([^"]+)"', html)


def test_the_list_is_oldest_first_by_deposit_and_an_unknown_deposit_is_explained(client, auth, db):
    with db.transaction() as tx:  # Norte has no stock in the demo morning
        tx.execute(
            "UPDATE stock_level SET on_hand = 50 WHERE warehouse_id = 'NOR'"
            " AND product_id = (SELECT id FROM product WHERE sku = 'TOR-010')"
        )
        tx.commit()
    first, north, last = _enter(client, auth, "CEN"), _enter(client, auth, "NOR"), _enter(client, auth, "CEN")
    for order_id, ticket in ((last, "DEP-3"), (north, "DEP-2"), (first, "DEP-1")):  # received newest first
        received_by_warehouse(db, order_id, ticket)
    as_user(client, auth, "sergio")
    assert _listed(page(client, "/warehouse")) == [first, north, last]  # first in, first out
    only_north = page(client, "/warehouse?deposit=NOR")
    assert _listed(only_north) == [north]
    assert re.findall(r'data-dispatch-order="([^"]+)"', only_north) == [north]  # the dispatch forms too
    assert 'href="/warehouse/picking?deposit=NOR"' in only_north and 'aria-current="page" data-deposit="NOR"' in only_north
    assert _listed(page(client, "/warehouse?deposit=cen")) == [first, last]
    unknown = client.get("/warehouse?deposit=SUR")
    assert unknown.status_code == 400
    text = unknown.get_data(as_text=True)
    assert "No hay ningún depósito con el código «SUR»" in text and "Centro o Norte" in text
    # An order gone out of the warehouse is no longer one to prepare.
    assert dispatch(client, first).status_code == 303
    assert _listed(page(client, "/warehouse")) == [north, last]
