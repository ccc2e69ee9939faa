"""An order confirmed through the app reaches both fakes once, and the worker logs carry its request id."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.e2e.order_forms import form_data, order_id_from
from tests.relay_fixtures import RELAY_TEST_ENV, ROOT, wait_until

pytestmark = pytest.mark.slow


def events_of(db, order_id):
    with db.reading() as conn:
        return conn.execute("SELECT * FROM outbox_event WHERE aggregate_id = %s", [order_id]).fetchall()


def test_confirmed_order_is_billed_and_handed_off_once_with_the_request_id_in_the_worker_log(app, client, auth, db, fakes, relay):
    [worker] = relay.start_workers(1)
    auth.login("vendedor1")
    html = client.get("/orders/new").get_data(as_text=True)
    response = client.post(
        "/orders/new", data=form_data(html, "Corralón del Sur", [("COR-200", 2)]), headers={"X-Request-ID": "pedido-1040-manana"}
    )
    assert response.status_code == 303
    order_id = order_id_from(response.headers["Location"])
    request_id = response.headers["X-Request-ID"]

    assert request_id == "pedido-1040-manana"

    def both_delivered():
        rows = events_of(db, order_id)
        return len(rows) == 2 and all(r["status"] == "ENTREGADO" for r in rows) and rows

    events = wait_until(both_delivered, timeout=30, message="both events ENTREGADO")
    by_dest = {e["destination"]: str(e["id"]) for e in events}
    assert [e["key"] for e in fakes.effects("fiscal")] == [by_dest["fiscal"]]
    assert [e["key"] for e in fakes.effects("warehouse")] == [by_dest["warehouse"]]
    with db.reading() as conn:
        order = conn.execute(
            "SELECT billing_status, invoice_number, handoff_ticket FROM orders WHERE id = %s", [order_id]
        ).fetchone()
    assert order["billing_status"] == "FACTURADO" and order["invoice_number"] and order["handoff_ticket"]

    page = client.get(f"/orders/{order_id}").get_data(as_text=True)
    assert page.count('data-event-status="ENTREGADO"') == 2

    def logged_with_request_id():
        lines = [json.loads(line) for line in relay.log(worker).splitlines() if line.startswith("{") and line.endswith("}")]
        return [entry for entry in lines if entry.get("logger") == "nexo.outbox.relay" and entry["request_id"] == request_id]

    # Each outcome is logged after its commit: wait for both lines (one alone is truthy too).
    wait_until(lambda: len(logged_with_request_id()) >= 2, timeout=10, message="both deliveries logged")
    assert len(logged_with_request_id()) == 2


@pytest.mark.parametrize("process", ["jobs.worker", "jobs.sweeper"])
def test_an_inconsistent_cadence_stops_start_up_with_a_clear_message(process):
    env = {**os.environ, **RELAY_TEST_ENV, "RELAY_LEASE_S": "2", "RELAY_JOB_TIMEOUT_S": "5"}
    done = subprocess.run(
        [sys.executable, "-m", process], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert "RELAY_LEASE_S (2.0) must be greater than RELAY_JOB_TIMEOUT_S (5.0)" in done.stderr
