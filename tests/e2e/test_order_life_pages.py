"""An order's whole life through the pages people use (guarantees 19 and 20), on real relay workers and fakes:
entered → approved → delivered → dispatched in part → dispatched in full; entered → delivered → cancelled →
compensated. The books hold after every step (nexo/books.py, and `flask check` at the end), and the order
page tells each story in time order from the rows that exist."""

from __future__ import annotations

import re

import pytest

from tests.e2e.lifecycle_support import (
    PLATINO,
    as_user,
    books_hold,
    cancel,
    dispatch,
    enter,
    page,
    timeline_kinds,
)
from tests.e2e.test_credit_queue import approve_data
from tests.integration.order_helpers import exposure, stock
from tests.relay_fixtures import order_row, wait_until

pytestmark = pytest.mark.slow


def delivered(db, order_id: str, *fields: str):
    """Wait until the relay wrote each destination's effect on the order; return the order row."""
    return wait_until(
        lambda: (row := order_row(db, order_id)) and all(row[f] for f in fields) and row,
        timeout=30,
        message=f"{fields} of {order_id}",
    )


def check_command(app) -> str:
    """`flask --app app check` on this database: its output (exit status 0 asserted)."""
    result = app.test_cli_runner().invoke(args=["check"])
    assert result.exit_code == 0, result.output
    return result.output


def test_entered_approved_dispatched_in_part_then_in_full(app, client, auth, db, fakes, relay):
    relay.start_workers(1)
    order_id = enter(client, auth, [("CAB-045", 3), ("COR-200", 2)], client_name=PLATINO)  # 33,100: over the limit
    books_hold(db)

    as_user(client, auth, "laura")
    queue = page(client, "/credit/queue")
    assert client.post(f"/credit/queue/{order_id}/approve", data=approve_data(queue, order_id)).status_code == 303
    order = delivered(db, order_id, "handoff_ticket", "invoice_number")
    books_hold(db)

    as_user(client, auth, "sergio")
    assert order["handoff_ticket"] in page(client, "/warehouse")
    assert dispatch(client, order_id, {"CAB-045": "1", "COR-200": ""}).status_code == 303
    assert order_row(db, order_id)["status"] == "DESPACHADO_PARCIAL"
    assert stock(db, "CAB-045") == {"on_hand": 39, "reserved": 2}
    books_hold(db)
    assert dispatch(client, order_id).status_code == 303  # the form's defaults: what remains
    assert order_row(db, order_id)["status"] == "DESPACHADO"
    assert stock(db, "CAB-045") == {"on_hand": 37, "reserved": 0} and stock(db, "COR-200") == {"on_hand": 498, "reserved": 0}
    books_hold(db)

    as_user(client, auth, "laura")
    html = page(client, f"/orders/{order_id}")
    kinds = timeline_kinds(html)
    assert kinds[:3] == ["created", "credit_pending", "credit_approved"]
    assert sorted(kinds[3:5]) == ["delivered", "delivered"] and kinds[5:] == ["dispatched", "dispatched"]
    assert order["handoff_ticket"] in html and order["invoice_number"] in html
    assert re.search(r'data-line-sku="CAB-045" data-ordered="3" data-dispatched="3"', html)
    moments = re.findall(r'data-timeline-kind="[a-z_]+" data-at="([^"]+)"', html)
    assert moments == sorted(moments)
    assert check_command(app).strip().endswith("verdict: stock and credit add up (5 checks)")


def test_entered_delivered_then_cancelled_each_destination_gets_its_cancellation_after_the_original(
    app, client, auth, db, fakes, relay
):
    relay.start_workers(1)
    before = exposure(db, "Corralón del Sur")
    order_id = enter(client, auth, [("COR-200", 3)])
    delivered(db, order_id, "handoff_ticket", "invoice_number")
    books_hold(db)

    response = cancel(client, order_id, "el cliente se arrepintió")
    assert response.status_code == 303
    order = delivered(db, order_id, "credit_note_number")
    assert order["billing_status"] == "ANULADA"
    assert stock(db, "COR-200") == {"on_hand": 500, "reserved": 0} and exposure(db, "Corralón del Sur") == before
    books_hold(db)
    assert [e["kind"] for e in fakes.effects("fiscal")] == ["invoice", "credit_note"]
    wait_until(lambda: [e["kind"] for e in fakes.effects("warehouse")] == ["handoff", "handoff_cancellation"])

    html = page(client, f"/orders/{order_id}")
    assert "Se avisa la anulación" in html  # the flash
    kinds = timeline_kinds(html)
    assert kinds[:2] == ["created", "credit_within_limit"] and kinds[4] == "cancelled"
    assert kinds[2:4] == ["delivered", "delivered"]
    wait_until(lambda: timeline_kinds(page(client, f"/orders/{order_id}"))[5:] == ["delivered", "delivered"])
    html = page(client, f"/orders/{order_id}")
    assert f"nota de crédito {order['credit_note_number']}" in html and "anulación de la preparación" in html
    assert 'data-billing-status="ANULADA"' in html and "anulada con nota de crédito" in html
    assert check_command(app).strip().endswith("verdict: stock and credit add up (5 checks)")


def test_a_cancel_before_anything_left_shows_what_was_withdrawn_and_a_failed_delivery_shows_too(client, auth, db):
    withdrawn = enter(client, auth, [("COR-200", 1)])
    assert cancel(client, withdrawn).status_code == 303  # no relay running: neither event had left
    html = page(client, f"/orders/{withdrawn}")
    assert timeline_kinds(html) == ["created", "credit_within_limit", "cancelled", "withdrawn", "withdrawn"]
    assert html.count("no llegó a enviarse") == 2
    books_hold(db)

    failed = enter(client, auth, [("COR-200", 1)])
    with db.transaction() as tx:  # what the relay records when the fiscal provider refuses for good
        tx.execute(
            "UPDATE outbox_event SET status = 'FALLIDO', attempts = 8, last_error = 'HTTP 422'"
            " WHERE aggregate_id = %s AND event_type = 'billing.intent_recorded'",
            [failed],
        )
        tx.execute(
            "INSERT INTO dead_letter (event_id, destination, attempts, error_signature, first_failed_at, last_failed_at)"
            " SELECT id, 'fiscal', 8, 'fiscal:422', now(), now() FROM outbox_event"
            " WHERE aggregate_id = %s AND event_type = 'billing.intent_recorded'",
            [failed],
        )
        tx.commit()
    html = page(client, f"/orders/{failed}")
    assert timeline_kinds(html) == ["created", "credit_within_limit", "failed"] and "Entregas fallidas" in html
