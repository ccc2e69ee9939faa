"""A destination sees an order's effects in order (guarantee 20, ADR-017), on real workers and real fakes.

Each destination ends with the original and its cancellation, in that order, or with neither —
whether the cancel comes after the delivery, before it, while a delivery is in flight, while the
destination times out, or after the original became a dead letter.
"""

from __future__ import annotations

import threading

import pytest

from nexo.db import Database
from nexo.deadletters import service as dead_letters
from nexo.orders import cancel
from nexo.orders.service import create_order
from nexo.outbox import relay
from nexo.outbox.http_client import HttpClient
from nexo.outbox.wakeup import request_delivery
from tests.integration.order_helpers import command, user_id
from tests.relay_fixtures import dead_letters_of, order_row, relay_settings, wait_until

pytestmark = pytest.mark.slow

SETTLED = ("ENTREGADO", "RETIRADO", "FALLIDO")


def events(db, order_id) -> dict[str, dict]:
    with db.reading() as conn:
        rows = conn.execute("SELECT * FROM outbox_event WHERE aggregate_id = %s", [order_id]).fetchall()
    return {r["event_type"]: r for r in rows}


def confirmed_order(db, redis_client):
    result = create_order(db, command(db, [("COR-200", 1)]))
    request_delivery(list(events(db, result.order_id)[t]["id"] for t in ("billing.intent_recorded", "order.handoff_requested")),
                     connection=redis_client, settings=relay_settings())  # fmt: skip
    return result.order_id


def cancel_it(db, order_id, redis_client):
    result = cancel.cancel_order(
        db, cancel.CancelOrder(order_id, user_id(db, "vendedor1"), "vendedor1", "lo anuló el cliente", False)
    )
    assert isinstance(result, cancel.Cancelled)
    return result


def kinds(fakes, dest) -> list[tuple[str, str]]:
    """(kind, the key it names: its own for an original, its original's for a cancellation), in the order applied."""
    out = []
    for e in fakes.effects(dest):
        named = e["payload"].get("invoice_key") or e["payload"].get("handoff_key") or e["key"]
        out.append((e["kind"], named))
    applied = [e["applied_at"] for e in fakes.effects(dest)]
    assert applied == sorted(applied)
    return out


def handoff_delivered(db, order_id) -> bool:
    """The warehouse has the handoff: the cases below cancel after it (a cancellation follows it there).

    A job's two lanes claim side by side; the fiscal one can have tried the invoice before the warehouse
    one claims the handoff, and a cancel in between withdraws the handoff untried (three events, not four).
    """
    return events(db, order_id)["order.handoff_requested"]["status"] == "ENTREGADO"


def all_settled(db, order_id, expected: int):
    rows = events(db, order_id)
    return len(rows) == expected and all(r["status"] in SETTLED for r in rows.values())


def test_a_cancel_after_delivery_reaches_each_destination_after_its_original(db, redis_client, fakes, relay):
    relay.start_workers(1)
    relay.start_sweepers(1)
    order_id = confirmed_order(db, redis_client)
    wait_until(lambda: all_settled(db, order_id, 2), message="both originals delivered")
    cancel_it(db, order_id, redis_client)
    wait_until(lambda: all_settled(db, order_id, 4), message="both cancellations settled")
    rows = events(db, order_id)
    assert {t: r["status"] for t, r in rows.items()} == dict.fromkeys(rows, "ENTREGADO")
    invoice, handoff = rows["billing.intent_recorded"]["id"], rows["order.handoff_requested"]["id"]
    assert kinds(fakes, "fiscal") == [("invoice", str(invoice)), ("credit_note", str(invoice))]
    assert kinds(fakes, "warehouse") == [("handoff", str(handoff)), ("handoff_cancellation", str(handoff))]
    order = order_row(db, order_id)
    assert order["billing_status"] == "ANULADA"
    assert order["credit_note_number"] == fakes.effects("fiscal")[1]["result"]["credit_note_number"]


def test_a_cancel_before_any_delivery_leaves_both_destinations_with_neither(db, redis_client, fakes, relay):
    order_id = confirmed_order(db, redis_client)  # no worker runs yet: the wake-up waits in the queue
    cancel_it(db, order_id, redis_client)
    relay.start_workers(1)
    relay.start_sweepers(1)
    wait_until(lambda: all_settled(db, order_id, 2), message="both originals withdrawn")
    assert {r["status"] for r in events(db, order_id).values()} == {"RETIRADO"}
    assert fakes.effects("fiscal") == [] and fakes.effects("warehouse") == []
    assert order_row(db, order_id)["billing_status"] == "NO_APLICA"


def test_a_destination_that_timed_out_before_applying_gets_neither(db, redis_client, fakes, relay):
    fakes.set_mode("fiscal", "timeout_before", delay_s=2)  # nothing is applied while it is like this
    relay.start_workers(1)
    relay.start_sweepers(1)
    order_id = confirmed_order(db, redis_client)
    wait_until(lambda: events(db, order_id)["billing.intent_recorded"]["attempts"] >= 1, message="the invoice was tried")
    wait_until(lambda: handoff_delivered(db, order_id), message="the handoff delivered")
    cancel_it(db, order_id, redis_client)
    fakes.set_mode("fiscal", "ok")
    wait_until(lambda: all_settled(db, order_id, 4), timeout=40, message="every event settled")
    rows = events(db, order_id)
    assert rows["billing.intent_recorded"]["status"] == "RETIRADO"
    assert rows["billing.intent_cancelled"]["status"] == "RETIRADO"  # nothing to undo there
    assert kinds(fakes, "fiscal") == []
    handoff = rows["order.handoff_requested"]["id"]
    assert kinds(fakes, "warehouse") == [("handoff", str(handoff)), ("handoff_cancellation", str(handoff))]


def test_a_cancel_while_the_original_is_in_flight_waits_for_it_and_comes_after(db, redis_client, fakes, relay):
    fakes.set_mode("fiscal", "timeout_after", times=1, delay_s=2.5)  # applied at once, answered too late
    relay.start_workers(1)
    relay.start_sweepers(1)
    order_id = confirmed_order(db, redis_client)
    invoice = wait_until(lambda: fakes.effects("fiscal"), message="the fake applied the invoice")[0]["key"]
    wait_until(lambda: handoff_delivered(db, order_id), message="the handoff delivered")
    cancel_it(db, order_id, redis_client)  # the worker is still waiting for that answer
    wait_until(lambda: all_settled(db, order_id, 4), timeout=40, message="every event settled")
    rows = events(db, order_id)
    assert rows["billing.intent_recorded"]["status"] == "RETIRADO"  # withdrawn while it was on its way
    assert rows["billing.intent_cancelled"]["status"] == "ENTREGADO"
    assert kinds(fakes, "fiscal") == [("invoice", invoice), ("credit_note", invoice)]
    assert order_row(db, order_id)["billing_status"] == "ANULADA"


def test_the_dead_letter_of_an_original_is_withdrawn_with_the_cancel_and_cannot_be_replayed(db, redis_client, fakes, relay):
    fakes.set_mode("fiscal", "error_4xx", times=1)  # a permanent refusal: FALLIDO and its dead letter
    relay.start_workers(1)
    relay.start_sweepers(1)
    order_id = confirmed_order(db, redis_client)
    invoice = events(db, order_id)["billing.intent_recorded"]["id"]
    letter = wait_until(lambda: dead_letters_of(db, invoice), message="the invoice's dead letter")[0]
    wait_until(lambda: handoff_delivered(db, order_id), message="the handoff delivered")
    cancel_it(db, order_id, redis_client)
    assert dead_letters_of(db, invoice)[0]["status"] == "resolved"
    replayed = dead_letters.replay(db, letter["id"], "marta")
    assert isinstance(replayed, dead_letters.AlreadyResolved)
    wait_until(lambda: all_settled(db, order_id, 4), timeout=40, message="every event settled")
    assert events(db, order_id)["billing.intent_cancelled"]["status"] == "RETIRADO"
    assert kinds(fakes, "fiscal") == []


@pytest.fixture
def two_workers(db, fakes):
    """Two relay contexts in this process, as two workers' (short test cadences: deadline 1 s, lease 3 s)."""
    settings = relay_settings()
    contexts = [
        relay.RelayContext(settings, Database(settings.database_url, max_size=2), HttpClient(1.0), f"test@{n}") for n in (1, 2)
    ]
    yield contexts
    for context in contexts:
        context.close()


def test_a_cancellation_never_overtakes_an_original_the_destination_is_still_applying(db, fakes, two_workers):
    # The fake takes 0.6 s before it applies the invoice (within the 1 s deadline). A cancellation sent
    # meanwhile would find nothing to undo, and the invoice would land after it: the destination would
    # keep an invoice for a cancelled order. So the cancellation waits for the invoice's attempt to end.
    first, second = two_workers
    fakes.set_mode("fiscal", "slow", times=1, delay_s=0.6)
    order_id = create_order(db, command(db, [("COR-200", 1)])).order_id
    invoice = events(db, order_id)["billing.intent_recorded"]["id"]
    sending = threading.Thread(target=relay.deliver_due, args=(first,), kwargs={"ids": [invoice]})
    sending.start()
    wait_until(lambda: events(db, order_id)["billing.intent_recorded"]["attempts"] == 1, message="the invoice is on its way")
    cancel_it(db, order_id, None)
    cancellation = events(db, order_id)["billing.intent_cancelled"]["id"]
    assert relay.deliver_due(second, ids=[cancellation]) == []  # not while the invoice may still land
    sending.join()
    assert relay.deliver_due(second, ids=[cancellation]) == ["ENTREGADO"]
    assert kinds(fakes, "fiscal") == [("invoice", str(invoice)), ("credit_note", str(invoice))]
    assert events(db, order_id)["billing.intent_recorded"]["status"] == "RETIRADO"  # withdrawn on its way
