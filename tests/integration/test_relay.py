"""The relay delivers a confirmed order's events exactly once per destination (guarantees 8-10)."""

from __future__ import annotations

import pytest

from nexo.outbox.wakeup import request_delivery
from tests.relay_fixtures import (
    attempts_of,
    event_rows,
    insert_confirmed_orders,
    order_row,
    relay_settings,
    wait_until,
)

pytestmark = pytest.mark.slow


def delivered(db, ids):
    rows = event_rows(db, ids)
    return len(rows) == len(ids) and all(r["status"] == "ENTREGADO" for r in rows.values())


def test_wakeup_delivers_both_events_once_and_bills_the_order(db, redis_client, fakes, relay):
    relay.start_workers(1)
    order = insert_confirmed_orders(db, 1)[0]
    ids = [order.fiscal_event_id, order.warehouse_event_id]
    request_delivery(ids, connection=redis_client, settings=relay_settings())

    wait_until(lambda: delivered(db, ids), timeout=30, message="both events ENTREGADO")
    fiscal, warehouse = fakes.effects("fiscal"), fakes.effects("warehouse")
    assert [e["key"] for e in fiscal] == [str(order.fiscal_event_id)]
    assert [e["key"] for e in warehouse] == [str(order.warehouse_event_id)]
    row = order_row(db, order.order_id)
    assert row["billing_status"] == "FACTURADO"
    assert row["invoice_number"] == fiscal[0]["result"]["invoice_number"]
    assert row["handoff_ticket"] == warehouse[0]["result"]["ticket"]
    events = event_rows(db, ids)
    assert all(e["attempts"] == 1 and e["delivered_at"] is not None for e in events.values())
    attempt = attempts_of(db, order.fiscal_event_id)
    assert [(a["outcome"], a["http_status"]) for a in attempt] == [("ENTREGADO", 201)]
    assert attempt[0]["finished_at"] is not None and attempt[0]["duration_ms"] is not None


def test_sweeper_delivers_events_whose_wakeup_was_never_sent(db, fakes, relay):
    relay.start_workers(1)
    relay.start_sweepers(1)
    order = insert_confirmed_orders(db, 1)[0]  # no request_delivery: the wake-up was "lost"
    ids = [order.fiscal_event_id, order.warehouse_event_id]
    wait_until(lambda: delivered(db, ids), timeout=30, message="the sweeper found both events")
    assert len(fakes.effects("fiscal")) == 1 and len(fakes.effects("warehouse")) == 1
