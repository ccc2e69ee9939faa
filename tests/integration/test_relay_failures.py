"""The fiscal provider times out or refuses; the order stays valid and the event waits (ADR-004, ADR-008).

Real worker and sweeper processes, real HTTP to the fakes (tests/relay_fixtures.py).
"""

from __future__ import annotations

import pytest

from nexo.outbox.wakeup import request_delivery
from tests.relay_fixtures import (
    attempts_of,
    dead_letters_of,
    event_row,
    insert_confirmed_orders,
    order_row,
    relay_settings,
    wait_until,
)

pytestmark = pytest.mark.slow


def start(relay, db, redis_client, **env):
    relay.start_workers(1, **env)
    relay.start_sweepers(1, **env)
    order = insert_confirmed_orders(db, 1)[0]
    request_delivery([order.fiscal_event_id], connection=redis_client, settings=relay_settings())
    return order


def retried_at_least(db, event_id, n):
    row = event_row(db, event_id)
    return row["status"] == "PENDIENTE" and row["attempts"] >= n and row["last_error"] and row


def test_t12_timeout_before_processing_waits_then_delivers_once(db, redis_client, fakes, relay):
    fakes.set_mode("fiscal", "timeout_before", delay_s=3)  # until changed
    order = start(relay, db, redis_client, RELAY_MAX_ATTEMPTS=50)
    waiting = wait_until(
        lambda: retried_at_least(db, order.fiscal_event_id, 2),
        timeout=40,
        message="two timed-out attempts, event still PENDIENTE",
    )
    assert "Timeout" in waiting["last_error"]
    assert fakes.effects("fiscal") == []
    row = order_row(db, order.order_id)
    assert (row["status"], row["billing_status"]) == ("CONFIRMADO", "PENDIENTE_FACTURACION")

    fakes.set_mode("fiscal", "ok")
    wait_until(lambda: event_row(db, order.fiscal_event_id)["status"] == "ENTREGADO", timeout=40)
    effects = fakes.effects("fiscal")
    assert [e["key"] for e in effects] == [str(order.fiscal_event_id)]
    row = order_row(db, order.order_id)
    assert (row["status"], row["billing_status"]) == ("CONFIRMADO", "FACTURADO")
    assert row["invoice_number"] == effects[0]["result"]["invoice_number"]
    outcomes = [a["outcome"] for a in attempts_of(db, order.fiscal_event_id)]
    assert outcomes[-1] == "ENTREGADO" and set(outcomes[:-1]) == {"REINTENTO"}


def test_t12_timeout_after_processing_is_applied_once_and_billed_with_the_same_invoice(db, redis_client, fakes, relay):
    fakes.set_mode("fiscal", "timeout_after", delay_s=3)
    order = start(relay, db, redis_client, RELAY_MAX_ATTEMPTS=50)
    wait_until(
        lambda: retried_at_least(db, order.fiscal_event_id, 2),
        timeout=40,
        message="the provider applied it but answered too late, twice",
    )
    applied = fakes.effects("fiscal")
    assert len(applied) == 1 and applied[0]["deliveries"] >= 2  # the retry reused the same key
    assert order_row(db, order.order_id)["billing_status"] == "PENDIENTE_FACTURACION"

    fakes.set_mode("fiscal", "ok")
    wait_until(lambda: event_row(db, order.fiscal_event_id)["status"] == "ENTREGADO", timeout=40)
    effects = fakes.effects("fiscal")
    assert len(effects) == 1 and effects[0]["key"] == str(order.fiscal_event_id)
    row = order_row(db, order.order_id)
    assert row["billing_status"] == "FACTURADO"
    assert row["invoice_number"] == applied[0]["result"]["invoice_number"]


def test_t12_permanent_error_fails_at_once_with_a_dead_letter_and_no_effect(db, redis_client, fakes, relay):
    fakes.set_mode("fiscal", "error_4xx")
    order = start(relay, db, redis_client)
    wait_until(lambda: event_row(db, order.fiscal_event_id)["status"] == "FALLIDO", timeout=30)
    row = event_row(db, order.fiscal_event_id)
    assert row["attempts"] == 1 and "HTTP 400" in row["last_error"]
    assert "rechazó" in row["last_error"]  # the destination's words, readable on the admin pages
    assert [(a["outcome"], a["http_status"]) for a in attempts_of(db, order.fiscal_event_id)] == [("FALLIDO", 400)]
    letters = dead_letters_of(db, order.fiscal_event_id)
    assert [(d["status"], d["destination"], d["http_status"]) for d in letters] == [("pending", "fiscal", 400)]
    assert fakes.effects("fiscal") == []
    assert order_row(db, order.order_id)["status"] == "CONFIRMADO"

    # The provider is fixed and the admin replays (same event, same key): delivered exactly once.
    fakes.set_mode("fiscal", "ok")
    with db.transaction() as tx:
        tx.execute("UPDATE dead_letter SET status = 'resolved', resolved_at = now() WHERE event_id = %s", [order.fiscal_event_id])
        tx.execute("UPDATE outbox_event SET status = 'PENDIENTE', next_attempt_at = now() WHERE id = %s", [order.fiscal_event_id])
        tx.commit()
    wait_until(lambda: event_row(db, order.fiscal_event_id)["status"] == "ENTREGADO", timeout=30)
    assert [e["key"] for e in fakes.effects("fiscal")] == [str(order.fiscal_event_id)]
    assert order_row(db, order.order_id)["billing_status"] == "FACTURADO"


def test_transient_errors_back_off_and_fail_after_max_attempts(db, redis_client, fakes, relay):
    fakes.set_mode("fiscal", "error_5xx")
    order = start(relay, db, redis_client, RELAY_MAX_ATTEMPTS=3)
    wait_until(lambda: event_row(db, order.fiscal_event_id)["status"] == "FALLIDO", timeout=40)
    row = event_row(db, order.fiscal_event_id)
    assert row["attempts"] == 3 and "503" in row["last_error"]
    attempts = attempts_of(db, order.fiscal_event_id)
    assert [a["outcome"] for a in attempts] == ["REINTENTO", "REINTENTO", "FALLIDO"]
    # exponential backoff: base 0.1 s × 2^attempts → the gaps between tries do not shrink
    gaps = [(b["started_at"] - a["finished_at"]).total_seconds() for a, b in zip(attempts, attempts[1:], strict=False)]
    assert gaps[0] >= 0.2 and gaps[1] >= 0.4
    assert len(dead_letters_of(db, order.fiscal_event_id)) == 1
    assert fakes.effects("fiscal") == []


def test_a_replayed_dead_letter_gets_a_fresh_cycle_of_attempts(db, redis_client, fakes, relay):
    """ADR-010: replay puts the event back for a fresh cycle; attempts keeps counting every try."""
    from nexo.deadletters import service as dead_letters

    fakes.set_mode("fiscal", "error_5xx")
    order = start(relay, db, redis_client, RELAY_MAX_ATTEMPTS=2)
    wait_until(lambda: event_row(db, order.fiscal_event_id)["status"] == "FALLIDO", timeout=40)
    dead_letter_id = dead_letters_of(db, order.fiscal_event_id)[0]["id"]
    # The destination still fails once after the replay: with a fresh cycle that is a retry, not a new
    # dead letter (a budget counted over the event's whole life would fail it at once).
    fakes.set_mode("fiscal", "error_5xx", times=1)
    assert dead_letters.replay(db, dead_letter_id, "marta").outcome == "done"
    wait_until(lambda: event_row(db, order.fiscal_event_id)["status"] == "ENTREGADO", timeout=40)
    row = event_row(db, order.fiscal_event_id)
    assert row["attempts"] == 4
    assert [a["outcome"] for a in attempts_of(db, order.fiscal_event_id)] == ["REINTENTO", "FALLIDO", "REINTENTO", "ENTREGADO"]
    assert len(dead_letters_of(db, order.fiscal_event_id)) == 1
    assert [e["key"] for e in fakes.effects("fiscal")] == [str(order.fiscal_event_id)]
