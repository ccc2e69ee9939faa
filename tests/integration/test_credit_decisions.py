"""CU-02 approve_order / reject_order on real Postgres: what each decision keeps, and what it refuses."""

from __future__ import annotations

import threading
import uuid

import psycopg
import pytest

from nexo.credit import service
from nexo.credit.events import order_event_payload
from nexo.orders.commands import CONFIRMED, PENDING_AUTHORIZATION
from nexo.orders.service import create_order
from tests.integration.order_helpers import command, count, stock, user_id

PLATINO = "Ferretería Platino SA"


def pending_order(db, lines=(("COR-200", 5),), client=PLATINO, salesperson="vendedor1"):
    """An order over the client's limit, created through order entry (CU-01): PENDIENTE_AUTORIZACION."""
    result = create_order(db, command(db, list(lines), client=client, salesperson=salesperson))
    assert result.outcome == PENDING_AUTHORIZATION
    return result.order_id


def approve(db, order_id, officer="laura", **kwargs):
    """approve_order as the given officer."""
    return service.approve_order(db, service.ApproveOrder(order_id, user_id(db, officer), officer, **kwargs))


def reject(db, order_id, reason="Cliente con cheques rechazados", officer="laura"):
    """reject_order as the given officer."""
    return service.reject_order(db, service.RejectOrder(order_id, user_id(db, officer), officer, reason))


def snapshot(db, order_id) -> dict:
    """Everything a decision may touch, as plain values."""
    with db.reading() as conn:
        order = conn.execute(
            "SELECT status, billing_status, decided_by, decided_at, decision_note, client_id FROM orders WHERE id = %s",
            [order_id],
        ).fetchone()
        return {
            **order,
            "exposure": conn.execute("SELECT exposure_cents FROM client WHERE id = %s", [order["client_id"]]).fetchone()[
                "exposure_cents"
            ],
            "reservations": [
                (r["sku"], r["kind"], r["released"])
                for r in conn.execute(
                    "SELECT p.sku, r.kind, r.released_at IS NOT NULL AS released FROM stock_reservation r"
                    " JOIN product p ON p.id = r.product_id WHERE r.order_id = %s ORDER BY p.sku",
                    [order_id],
                )
            ],
            "reserved": {
                r["sku"]: r["reserved"]
                for r in conn.execute(
                    "SELECT p.sku, s.reserved FROM stock_level s JOIN product p ON p.id = s.product_id"
                    " WHERE s.warehouse_id = 'CEN'"
                )
            },
            "events": sorted(
                (e["event_type"], e["status"])
                for e in conn.execute("SELECT event_type, status FROM outbox_event WHERE aggregate_id = %s", [order_id])
            ),
            "audit": [
                (a["action"], a["actor"], a["details"])
                for a in conn.execute(
                    "SELECT action, actor, details FROM audit_log WHERE object_type = 'order' AND object_id = %s ORDER BY id",
                    [str(order_id)],
                )
            ],
        }


def test_approving_confirms_with_firm_reservations_two_outbox_events_and_an_audit_row(db):
    order_id = pending_order(db, [("COR-200", 5)])  # 16,000.00 over a 10,000.00 margin
    before = snapshot(db, order_id)
    result = approve(
        db, order_id, note="Cliente de siempre, habló conmigo", seen_exposure_cents=99_000_000, seen_limit_cents=100_000_000
    )
    assert isinstance(result, service.Decided) and result.status == "CONFIRMADO"
    after = snapshot(db, order_id)
    assert (after["status"], after["billing_status"]) == ("CONFIRMADO", "PENDIENTE_FACTURACION")
    assert after["decided_by"] == user_id(db, "laura") and after["decided_at"] is not None
    assert after["reservations"] == [("COR-200", "FIRME", False)]
    assert after["reserved"] == before["reserved"]  # soft -> firm moves no unit
    assert after["exposure"] == 99_000_000 + 1_600_000  # the officer authorizes the excess (RN-01)
    assert after["events"] == [("billing.intent_recorded", "PENDIENTE"), ("order.handoff_requested", "PENDIENTE")]
    [(action, actor, details)] = after["audit"]
    assert (action, actor) == ("credit.approved", "laura")
    assert details["limit_cents"] == 100_000_000 and details["exposure_cents"] == 99_000_000
    assert details["excess_cents"] == 600_000 and details["exposure_after_cents"] == 100_600_000
    assert details["note"] == "Cliente de siempre, habló conmigo" and details["figures_confirmed"] is True


def test_approval_wakes_the_relay_only_after_the_events_are_committed(db):
    seen_by_another_connection = []

    class RecordingWakeup:
        def request_delivery(self, event_ids):
            # count() borrows another pooled connection: it sees the events only once they are committed.
            seen_by_another_connection.append(
                count(db, "SELECT count(*) FROM outbox_event WHERE id = ANY(%s)", [list(event_ids)])
            )

    order_id = pending_order(db)
    result = service.approve_order(db, service.ApproveOrder(order_id, user_id(db, "laura"), "laura"), RecordingWakeup())
    assert len(result.event_ids) == 2
    assert seen_by_another_connection == [2]


def test_approved_events_carry_the_same_payload_as_an_order_confirmed_at_entry(db):
    confirmed = create_order(db, command(db, [("TOR-010", 3), ("COR-200", 1)], client="Corralón del Sur"))
    assert confirmed.outcome == CONFIRMED
    with db.reading() as conn:
        written_by_entry = conn.execute(
            "SELECT payload FROM outbox_event WHERE aggregate_id = %s LIMIT 1", [confirmed.order_id]
        ).fetchone()["payload"]
        assert order_event_payload(conn, confirmed.order_id) == written_by_entry


def test_rejecting_releases_the_soft_reservation_and_records_the_reason(db):
    order_id = pending_order(db, [("COR-118", 1)])  # the last unit, held by a platinum order
    assert stock(db, "COR-118") == {"on_hand": 1, "reserved": 1}
    result = reject(db, order_id, reason="Supera el límite y tiene deuda vencida")
    assert isinstance(result, service.Decided) and result.status == "RECHAZADO"
    after = snapshot(db, order_id)
    assert (after["status"], after["billing_status"]) == ("RECHAZADO", "NO_APLICA")
    assert after["decision_note"] == "Supera el límite y tiene deuda vencida"
    assert after["reservations"] == [("COR-118", "BLANDA", True)]
    assert stock(db, "COR-118") == {"on_hand": 1, "reserved": 0}  # the unit is available again
    assert after["events"] == [] and after["exposure"] == 99_000_000
    [(action, actor, details)] = after["audit"]
    assert (action, actor, details["reason"]) == ("credit.rejected", "laura", "Supera el límite y tiene deuda vencida")
    assert details["released"] == [{"sku": "COR-118", "quantity": 1}]
    # ...and another salesperson can now have it.
    assert create_order(db, command(db, [("COR-118", 1)], salesperson="vendedor2")).outcome == CONFIRMED


def test_a_rejection_needs_a_reason_in_the_command_and_in_the_database(db):
    order_id = pending_order(db)
    with pytest.raises(ValueError):
        service.RejectOrder(order_id, user_id(db, "laura"), "laura", "   ")
    with pytest.raises(psycopg.errors.CheckViolation), db.transaction() as tx:
        tx.execute(
            "UPDATE orders SET status = 'RECHAZADO', decided_at = now(), decided_by = %s WHERE id = %s",
            [user_id(db, "laura"), order_id],
        )


def test_approving_after_the_exposure_changed_approves_nothing_and_reports_both_figures(db):
    order_id = pending_order(db)
    with db.transaction() as tx:  # e.g. an invoice was registered meanwhile
        tx.execute("UPDATE client SET exposure_cents = %s WHERE name = %s", [99_500_000, PLATINO])
        tx.commit()
    before = snapshot(db, order_id)
    result = approve(db, order_id, seen_exposure_cents=99_000_000, seen_limit_cents=100_000_000)
    assert isinstance(result, service.FiguresChanged)
    assert (result.seen.exposure_cents, result.current.exposure_cents) == (99_000_000, 99_500_000)
    assert (result.seen.excess_cents, result.current.excess_cents) == (600_000, 1_100_000)
    assert snapshot(db, order_id) == before  # status, reservations, events, audit: untouched
    # Confirming again with the figures now on screen goes through.
    again = approve(db, order_id, seen_exposure_cents=99_500_000, seen_limit_cents=100_000_000)
    assert isinstance(again, service.Decided)


def test_second_order_of_a_client_shows_the_exposure_moved_by_approving_the_first(db):
    first, second = pending_order(db), pending_order(db, [("TOR-010", 100)])
    seen = {"seen_exposure_cents": 99_000_000, "seen_limit_cents": 100_000_000}  # one queue page, two rows
    assert isinstance(approve(db, first, **seen), service.Decided)
    result = approve(db, second, **seen)
    assert isinstance(result, service.FiguresChanged)
    assert result.current.exposure_cents == 99_000_000 + 1_600_000
    assert snapshot(db, second)["status"] == "PENDIENTE_AUTORIZACION"


def test_approving_an_order_whose_reservation_was_released_is_refused(db):
    order_id = pending_order(db, [("COR-118", 1), ("COR-200", 1)])
    with db.transaction() as tx:  # some other writer gave the unit back (a future RN-07 job, a manual fix)
        tx.execute(
            "UPDATE stock_level SET reserved = reserved - 1 WHERE warehouse_id = 'CEN'"
            " AND product_id = (SELECT id FROM product WHERE sku = 'COR-118')"
        )
        tx.execute(
            "UPDATE stock_reservation SET released_at = now() WHERE order_id = %s"
            " AND product_id = (SELECT id FROM product WHERE sku = 'COR-118')",
            [order_id],
        )
        tx.commit()
    before = snapshot(db, order_id)
    result = approve(db, order_id)
    assert result == service.ReservationReleased(order_id, ("COR-118",))
    assert snapshot(db, order_id) == before


def test_deciding_an_order_already_decided_names_who_decided_it_and_changes_nothing(db):
    order_id = pending_order(db)
    approve(db, order_id)
    before = snapshot(db, order_id)
    result = reject(db, order_id)
    assert isinstance(result, service.AlreadyDecided)
    assert (result.status, result.decided_by) == ("CONFIRMADO", "Laura (crédito)")
    assert snapshot(db, order_id) == before


def test_an_order_confirmed_at_entry_is_not_pending_and_nobody_decided_it(db):
    confirmed = create_order(db, command(db, [("COR-200", 1)], client="Corralón del Sur"))
    result = approve(db, confirmed.order_id)
    assert isinstance(result, service.AlreadyDecided) and (result.status, result.decided_by) == ("CONFIRMADO", None)


def test_an_unknown_order_is_not_found(db):
    assert isinstance(approve(db, uuid.uuid4()), service.NotFound)
    assert isinstance(reject(db, uuid.uuid4()), service.NotFound)


def test_an_approval_without_the_figures_seen_is_recorded_as_such(db):
    order_id = pending_order(db)
    assert isinstance(approve(db, order_id), service.Decided)
    [(_, _, details)] = snapshot(db, order_id)["audit"]
    assert details["figures_confirmed"] is False and details["exposure_cents"] == 99_000_000


def test_the_audit_rows_of_a_decision_cannot_be_altered(db):
    order_id = pending_order(db)
    approve(db, order_id, note="ok")
    for statement in ("UPDATE audit_log SET actor = 'nadie' WHERE object_id = %s", "DELETE FROM audit_log WHERE object_id = %s"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction() as tx:
            tx.execute(statement, [str(order_id)])
    assert [a[1] for a in snapshot(db, order_id)["audit"]] == ["laura"]


def wait_for_lock_waiters(db, n: int, table_hint: str = "UPDATE orders") -> None:
    """Block until n backends wait on a row lock in a statement containing table_hint (no timing assumed)."""
    for _ in range(3000):
        waiting = count(
            db,
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND datname = current_database() AND query LIKE %s",
            [f"%{table_hint}%"],
        )
        if waiting >= n:
            return
        threading.Event().wait(0.01)
    pytest.fail(f"{n} deciders never queued on the order row")


def test_approve_and_reject_at_once_one_wins_and_the_state_is_consistent(db):
    order_id = pending_order(db, [("COR-118", 1)])
    results = {}
    with db.transaction() as holder:
        # Hold the order row so both decisions are inside their transactions, queued on it, at once.
        holder.execute("SELECT 1 FROM orders WHERE id = %s FOR UPDATE", [order_id])
        threads = [
            threading.Thread(target=lambda: results.__setitem__("approve", approve(db, order_id))),
            threading.Thread(target=lambda: results.__setitem__("reject", reject(db, order_id, officer="laura"))),
        ]
        for queued, t in enumerate(threads, start=1):  # approve queues first, then reject
            t.start()
            wait_for_lock_waiters(db, queued)
    for t in threads:
        t.join()
    kinds = sorted(type(r).__name__ for r in results.values())
    assert kinds == ["AlreadyDecided", "Decided"]
    state = snapshot(db, order_id)
    assert_consistent(state)
    assert state["reserved"]["COR-118"] == (1 if state["status"] == "CONFIRMADO" else 0)


def assert_consistent(state: dict) -> None:
    """An order is either approved (firm, counted, announced) or rejected (released), never a mix."""
    assert len(state["audit"]) == 1
    if state["status"] == "CONFIRMADO":
        assert all(kind == "FIRME" and not released for _, kind, released in state["reservations"])
        assert len(state["events"]) == 2 and state["audit"][0][0] == "credit.approved"
    else:
        assert state["status"] == "RECHAZADO"
        assert all(kind == "BLANDA" and released for _, kind, released in state["reservations"])
        assert state["events"] == [] and state["audit"][0][0] == "credit.rejected"
