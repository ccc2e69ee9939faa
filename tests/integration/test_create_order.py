"""create_order (CU-01) on real Postgres: outcomes, what each one persists, and what it leaves alone."""

from __future__ import annotations

from nexo.orders.commands import CONFIRMED, CONFLICT, PENDING_AUTHORIZATION, REJECTED, REPLAYED
from nexo.orders.service import create_order
from tests.integration.order_helpers import command, count, exposure, stock


def test_order_within_credit_is_confirmed_with_firm_reservations_and_two_outbox_events(db):
    result = create_order(db, command(db, [("COR-200", 2), ("TOR-010", 10)]))
    assert result.outcome == CONFIRMED
    assert count(db, "SELECT count(*) FROM orders WHERE status = 'CONFIRMADO'"
                     " AND billing_status = 'PENDIENTE_FACTURACION' AND total_cents = %s", [2 * 320_000 + 10 * 15_000]) == 1
    assert count(db, "SELECT count(*) FROM stock_reservation WHERE kind = 'FIRME' AND expires_at IS NULL") == 2
    assert stock(db, "COR-200")["reserved"] == 2
    assert count(db, "SELECT count(*) FROM outbox_event WHERE status = 'PENDIENTE'") == 2
    assert exposure(db, "Corralón del Sur") == 2 * 320_000 + 10 * 15_000


def test_same_request_id_same_content_returns_original_order(db):
    cmd = command(db, [("CAB-045", 40)])
    first = create_order(db, cmd)
    second = create_order(db, cmd)
    assert (first.outcome, second.outcome) == (CONFIRMED, REPLAYED)
    assert second.order_id == first.order_id
    assert count(db, "SELECT count(*) FROM orders") == 1
    assert stock(db, "CAB-045")["reserved"] == 40


def test_same_request_id_other_quantity_is_a_conflict(db):
    cmd = command(db, [("CAB-045", 40)])
    create_order(db, cmd)
    other = command(db, [("CAB-045", 10)], request_id=cmd.request_id)
    assert create_order(db, other).outcome == CONFLICT
    assert count(db, "SELECT count(*) FROM orders") == 1


def test_over_the_limit_waits_for_authorization_with_soft_reservations_and_no_events(db):
    result = create_order(db, command(db, [("COR-200", 16)], client="Obras Rápidas SRL"))
    assert result.outcome == PENDING_AUTHORIZATION
    assert count(db, "SELECT count(*) FROM stock_reservation WHERE kind = 'BLANDA'") == 1
    assert count(db, "SELECT count(*) FROM outbox_event") == 0
    assert exposure(db, "Obras Rápidas SRL") == 0


def test_rejection_leaves_nothing(db):
    result = create_order(db, command(db, [("COR-118", 2), ("PRC-000", 1)]))
    assert result.outcome == REJECTED
