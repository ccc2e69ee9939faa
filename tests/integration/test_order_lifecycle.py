"""An order's whole life on real Postgres (guarantee 19): cancel, dispatch, payments; the books add up after each."""

from __future__ import annotations

import threading
import uuid

import pytest

from nexo.books import read_books
from nexo.credit.payments import (
    ExceedsExposure,
    PaymentKeyReused,
    PaymentRecorded,
    PaymentReplayed,
    RecordPayment,
    record_payment,
)
from nexo.credit.service import RejectOrder, reject_order
from nexo.orders import cancel, dispatch
from nexo.orders.service import create_order
from tests.integration.order_helpers import client_id, command, count, exposure, stock, user_id


def books_hold(db) -> None:
    failed = [f for f in read_books(db) if not f.ok]
    assert failed == [], failed


def new_order(db, lines, **kwargs):
    result = create_order(db, command(db, lines, **kwargs))
    return result.order_id, result.order_status


def cancel_cmd(db, order_id, *, who="vendedor1", reason="el cliente llamó para anularlo", may_cancel_any=False):
    return cancel.CancelOrder(order_id, user_id(db, who), who, reason, may_cancel_any=may_cancel_any)


def dispatch_cmd(db, order_id, lines=None, key=None):
    ship = None if lines is None else tuple(dispatch.ShipLine(sku, qty) for sku, qty in lines)
    return dispatch.DispatchOrder(order_id, user_id(db, "sergio"), "sergio", ship, idempotency_key=key)


def order_status(db, order_id) -> str:
    with db.reading() as conn:
        return conn.execute("SELECT status FROM orders WHERE id = %s", [order_id]).fetchone()["status"]


def events_of(db, order_id) -> list[dict]:
    with db.reading() as conn:
        return conn.execute(
            "SELECT id, event_type, status, depends_on FROM outbox_event WHERE aggregate_id = %s ORDER BY created_at, event_type",
            [order_id],
        ).fetchall()


def test_cancel_of_a_confirmed_order_releases_what_it_held_and_gives_back_its_charge(db):
    before = exposure(db, "Corralón del Sur")
    order_id, status = new_order(db, [("COR-200", 3), ("TOR-010", 10)])
    assert status == "CONFIRMADO"
    assert stock(db, "COR-200")["reserved"] == 3
    assert exposure(db, "Corralón del Sur") == before + 3 * 320_000 + 10 * 15_000

    result = cancel.cancel_order(db, cancel_cmd(db, order_id))

    assert isinstance(result, cancel.Cancelled)
    assert sorted(result.released) == [("COR-200", 3), ("TOR-010", 10)]
    assert order_status(db, order_id) == "ANULADO"
    assert stock(db, "COR-200") == {"on_hand": 500, "reserved": 0}
    assert stock(db, "TOR-010")["reserved"] == 0
    assert exposure(db, "Corralón del Sur") == before
    # Neither event had left: both withdrawn, no cancellation written (ADR-017).
    assert {(e["event_type"], e["status"]) for e in events_of(db, order_id)} == {
        ("order.handoff_requested", "RETIRADO"),
        ("billing.intent_recorded", "RETIRADO"),
    }
    assert count(db, "SELECT count(*) FROM audit_log WHERE action = 'order.cancelled' AND object_id = %s", [str(order_id)]) == 1
    books_hold(db)


def test_cancel_of_a_pending_order_releases_its_soft_reservation_and_gives_back_nothing(db):
    before = exposure(db, "Ferretería Platino SA")
    order_id, status = new_order(db, [("CAB-045", 2)], client="Ferretería Platino SA")
    assert status == "PENDIENTE_AUTORIZACION"
    assert stock(db, "CAB-045")["reserved"] == 2

    result = cancel.cancel_order(db, cancel_cmd(db, order_id, who="laura", may_cancel_any=True))

    assert isinstance(result, cancel.Cancelled) and result.given_back_cents == 0
    assert stock(db, "CAB-045")["reserved"] == 0
    assert exposure(db, "Ferretería Platino SA") == before
    assert events_of(db, order_id) == []
    books_hold(db)


def test_a_second_cancel_releases_nothing_twice(db):
    order_id, _ = new_order(db, [("COR-200", 5)])
    first = cancel.cancel_order(db, cancel_cmd(db, order_id))
    exposure_after = exposure(db, "Corralón del Sur")
    second = cancel.cancel_order(db, cancel_cmd(db, order_id))
    assert isinstance(first, cancel.Cancelled) and isinstance(second, cancel.AlreadyCancelled)
    assert stock(db, "COR-200") == {"on_hand": 500, "reserved": 0}
    assert exposure(db, "Corralón del Sur") == exposure_after
    books_hold(db)


def test_another_salespersons_order_is_not_found_and_left_as_it_is(db):
    order_id, _ = new_order(db, [("COR-200", 1)])
    result = cancel.cancel_order(db, cancel_cmd(db, order_id, who="vendedor2"))
    assert isinstance(result, cancel.NotFound)
    assert order_status(db, order_id) == "CONFIRMADO"


def test_rejected_and_dispatched_orders_are_not_cancellable(db):
    rejected, _ = new_order(db, [("CAB-045", 2)], client="Ferretería Platino SA")
    reject_order(db, RejectOrder(rejected, user_id(db, "laura"), "laura", "sin crédito"))
    shipped, _ = new_order(db, [("COR-200", 2)])
    assert isinstance(dispatch.dispatch_order(db, dispatch_cmd(db, shipped, [("COR-200", 1)])), dispatch.Dispatched)
    for order_id, status in ((rejected, "RECHAZADO"), (shipped, "DESPACHADO_PARCIAL")):
        result = cancel.cancel_order(db, cancel_cmd(db, order_id, who="laura", may_cancel_any=True))
        assert result == cancel.NotCancellable(order_id, status)
    assert stock(db, "COR-200") == {"on_hand": 499, "reserved": 1}
    books_hold(db)


def test_a_cancel_after_delivery_writes_one_cancellation_per_destination_after_its_original(db):
    order_id, _ = new_order(db, [("COR-200", 1)])
    with db.transaction() as tx:  # as the relay records a delivery (the relay itself is tested apart)
        tx.execute(
            "UPDATE outbox_event SET status = 'ENTREGADO', attempts = 1, delivered_at = now() WHERE aggregate_id = %s", [order_id]
        )
        tx.commit()
    result = cancel.cancel_order(db, cancel_cmd(db, order_id))
    events = {e["event_type"]: e for e in events_of(db, order_id)}
    assert set(result.event_ids) == {events["order.handoff_cancelled"]["id"], events["billing.intent_cancelled"]["id"]}
    assert events["order.handoff_cancelled"]["depends_on"] == events["order.handoff_requested"]["id"]
    assert events["billing.intent_cancelled"]["depends_on"] == events["billing.intent_recorded"]["id"]
    assert events["order.handoff_cancelled"]["status"] == "PENDIENTE"
    books_hold(db)


def test_dispatch_consumes_the_firm_reservation_part_then_the_rest(db):
    order_id, _ = new_order(db, [("COR-200", 4), ("TOR-010", 100)])
    first = dispatch.dispatch_order(db, dispatch_cmd(db, order_id, [("cor-200", 1)]))
    assert isinstance(first, dispatch.Dispatched) and first.status == "DESPACHADO_PARCIAL"
    assert stock(db, "COR-200") == {"on_hand": 499, "reserved": 3}
    books_hold(db)
    rest = dispatch.dispatch_order(db, dispatch_cmd(db, order_id))  # everything that remains
    assert isinstance(rest, dispatch.Dispatched) and rest.status == "DESPACHADO"
    assert stock(db, "COR-200") == {"on_hand": 496, "reserved": 0}
    assert stock(db, "TOR-010") == {"on_hand": 9_900, "reserved": 0}
    assert dispatch.dispatch_order(db, dispatch_cmd(db, order_id)) == dispatch.NotDispatchable(order_id, "DESPACHADO")
    books_hold(db)


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([("COR-200", 3)], dispatch.ExceedsRemaining((("COR-200", 3, 2),))),
        ([("TOR-010", 1)], "invalid"),
        ([("COR-200", 0)], "invalid"),
        ([("COR-200", -1)], "invalid"),
        ([("COR-200", 1), ("cor-200 ", 1)], "invalid"),
    ],
)
def test_a_refused_dispatch_keeps_nothing(db, lines, expected):
    order_id, _ = new_order(db, [("COR-200", 2)])
    result = dispatch.dispatch_order(db, dispatch_cmd(db, order_id, lines))
    if expected == "invalid":
        assert isinstance(result, dispatch.Invalid)
    else:
        assert result == expected
    assert stock(db, "COR-200") == {"on_hand": 500, "reserved": 2}
    assert order_status(db, order_id) == "CONFIRMADO"
    assert count(db, "SELECT count(*) FROM shipment") == 0


def test_a_pending_order_is_not_dispatchable(db):
    order_id, _ = new_order(db, [("CAB-045", 2)], client="Ferretería Platino SA")
    assert isinstance(dispatch.dispatch_order(db, dispatch_cmd(db, order_id)), dispatch.NotDispatchable)
    assert stock(db, "CAB-045") == {"on_hand": 40, "reserved": 2}


def test_a_retried_shipment_is_applied_once_and_another_body_with_its_key_is_refused(db):
    order_id, _ = new_order(db, [("COR-200", 4)])
    key = uuid.uuid4()
    first = dispatch.dispatch_order(db, dispatch_cmd(db, order_id, [("COR-200", 1)], key=key))
    again = dispatch.dispatch_order(db, dispatch_cmd(db, order_id, [("COR-200", 1)], key=key))
    other = dispatch.dispatch_order(db, dispatch_cmd(db, order_id, [("COR-200", 2)], key=key))
    assert isinstance(first, dispatch.Dispatched)
    assert again == dispatch.Replayed(first.shipment_id, order_id)
    assert isinstance(other, dispatch.KeyReused)
    assert stock(db, "COR-200") == {"on_hand": 499, "reserved": 3}
    books_hold(db)


def test_a_cancel_and_a_dispatch_racing_one_wins_and_the_books_hold(db):
    for _ in range(10):
        order_id, _ = new_order(db, [("COR-200", 2)])
        barrier, results = threading.Barrier(2), {}

        def run(name, call, barrier=barrier, results=results):
            barrier.wait()
            results[name] = call()

        threads = [
            threading.Thread(target=run, args=("cancel", lambda o=order_id: cancel.cancel_order(db, cancel_cmd(db, o)))),
            threading.Thread(target=run, args=("dispatch", lambda o=order_id: dispatch.dispatch_order(db, dispatch_cmd(db, o)))),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        won = [name for name, r in results.items() if isinstance(r, cancel.Cancelled | dispatch.Dispatched)]
        assert len(won) == 1, results
        assert isinstance(
            results["dispatch" if won == ["cancel"] else "cancel"], dispatch.NotDispatchable | cancel.NotCancellable
        )
    books_hold(db)


def payment(db, cents, *, key=None, reference="transferencia 0001", client="Ferretería Platino SA"):
    return RecordPayment(client_id(db, client), cents, reference, user_id(db, "laura"), "laura", idempotency_key=key)


def test_a_payment_lowers_the_exposure_once_per_key(db):
    before = exposure(db, "Ferretería Platino SA")
    key = uuid.uuid4()
    first = record_payment(db, payment(db, 100_000_00, key=key))
    again = record_payment(db, payment(db, 100_000_00, key=key))
    other = record_payment(db, payment(db, 5, key=key))
    assert isinstance(first, PaymentRecorded) and first.exposure_cents == before - 100_000_00
    assert again == PaymentReplayed(first.payment_id)
    assert isinstance(other, PaymentKeyReused)
    assert exposure(db, "Ferretería Platino SA") == before - 100_000_00
    books_hold(db)


def test_a_payment_over_the_exposure_keeps_nothing(db):
    before = exposure(db, "Ferretería Platino SA")
    result = record_payment(db, payment(db, before + 1))
    assert result == ExceedsExposure(before)
    assert exposure(db, "Ferretería Platino SA") == before
    assert count(db, "SELECT count(*) FROM payment") == 0


def test_concurrent_payments_never_take_the_exposure_below_zero(db):
    owed = exposure(db, "Ferretería Platino SA")
    barrier = threading.Barrier(8)
    results = []

    def pay():
        barrier.wait()
        results.append(record_payment(db, payment(db, owed // 4 + 1, reference=str(uuid.uuid4()))))

    threads = [threading.Thread(target=pay) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(isinstance(r, PaymentRecorded) for r in results) == 3
    assert exposure(db, "Ferretería Platino SA") == owed - 3 * (owed // 4 + 1)
    books_hold(db)
