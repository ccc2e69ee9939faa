"""GET /warehouse: Sergio sees the handoffs the warehouse system accepted (permission warehouse.view)."""

from __future__ import annotations

import re

import pytest

from nexo.outbox.wakeup import request_delivery
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
