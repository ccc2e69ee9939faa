"""Separation of duties (ADR-018): whoever entered an order cannot approve or reject its credit, even holding
both the sales and the credit roles; another officer can."""

from __future__ import annotations

import pytest

from tests.e2e.order_forms import form_data, order_id_from
from tests.e2e.test_api_key_scopes import give_roles
from tests.e2e.test_credit_queue import PLATINO, approve_data


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_nobody_decides_the_credit_of_their_own_order(client, auth, db, decision):
    give_roles(db, "vendedor2", "credito")
    auth.login("vendedor2")
    html = client.get("/orders/new").get_data(as_text=True)
    created = client.post("/orders/new", data=form_data(html, PLATINO, [("COR-200", 10)]))
    order_id = order_id_from(created.headers["Location"])
    page = client.get("/credit/queue").get_data(as_text=True)
    data = approve_data(page, order_id, reason="me lo rechazo yo")
    refused = client.post(f"/credit/queue/{order_id}/{decision}", data=data)
    assert refused.status_code == 403 and 'data-reason="own_order"' in refused.get_data(as_text=True)
    with db.reading() as conn:
        status = conn.execute("SELECT status FROM orders WHERE id = %s", [order_id]).fetchone()["status"]
        audits = conn.execute("SELECT count(*) AS n FROM audit_log WHERE action LIKE 'credit.%%'").fetchone()["n"]
    assert status == "PENDIENTE_AUTORIZACION" and audits == 0
    auth.logout()
    auth.login("laura")
    page = client.get("/credit/queue").get_data(as_text=True)
    assert client.post(f"/credit/queue/{order_id}/{decision}", data=approve_data(page, order_id, reason="no")).status_code == 303
