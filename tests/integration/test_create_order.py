"""create_order (CU-01) on real Postgres: outcomes, what each one persists, and what it leaves alone."""

from __future__ import annotations

import uuid

import pytest

from nexo.orders import repository
from nexo.orders.commands import (
    CONFIRMED,
    CONFLICT,
    INVALID,
    PENDING_AUTHORIZATION,
    REJECTED,
    REPLAYED,
    CreateOrder,
    OrderLineRequest,
)
from nexo.orders.fingerprint import FINGERPRINT_VERSION
from nexo.orders.service import command_fingerprint, create_order
from tests.integration.order_helpers import client_id, command, count, exposure, link_request_to_order, stock

NOTHING_PERSISTED = [
    "SELECT count(*) FROM idempotency_keys",
    "SELECT count(*) FROM orders",
    "SELECT count(*) FROM order_line",
    "SELECT count(*) FROM stock_reservation",
    "SELECT count(*) FROM outbox_event",
    "SELECT coalesce(sum(reserved), 0) FROM stock_level",
]


def assert_nothing_persisted(db):
    assert [count(db, sql) for sql in NOTHING_PERSISTED] == [0] * len(NOTHING_PERSISTED)


def test_order_within_credit_is_confirmed_with_firm_reservations_and_two_outbox_events(db):
    cmd = command(db, [("COR-200", 2), ("TOR-010", 10)])
    result = create_order(db, cmd)
    total = 2 * 320_000 + 10 * 15_000
    assert (result.outcome, result.order_status) == (CONFIRMED, "CONFIRMADO")
    assert (
        count(
            db,
            "SELECT count(*) FROM orders WHERE id = %s AND status = 'CONFIRMADO'"
            " AND billing_status = 'PENDIENTE_FACTURACION' AND total_cents = %s",
            [result.order_id, total],
        )
        == 1
    )
    assert (
        count(
            db, "SELECT count(*) FROM order_line WHERE order_id = %s AND unit_price_cents IN (320000, 15000)", [result.order_id]
        )
        == 2
    )
    assert count(db, "SELECT count(*) FROM stock_reservation WHERE kind = 'FIRME' AND expires_at IS NULL") == 2
    assert stock(db, "COR-200")["reserved"] == 2 and stock(db, "TOR-010")["reserved"] == 10
    assert exposure(db, "Corralón del Sur") == total
    assert (
        count(
            db,
            "SELECT count(*) FROM idempotency_keys WHERE request_id = %s AND order_id = %s"
            " AND request_hash = %s AND fingerprint_version = %s",
            [cmd.request_id, result.order_id, command_fingerprint(cmd), FINGERPRINT_VERSION],
        )
        == 1
    )


def test_confirmed_order_writes_handoff_and_billing_events_with_what_the_destinations_need(db):
    result = create_order(db, command(db, [("TOR-010", 10), ("COR-200", 2)]))
    with db.reading() as conn:
        events = {
            e["event_type"]: e
            for e in conn.execute(
                "SELECT event_type, destination, status, payload FROM outbox_event WHERE aggregate_id = %s", [result.order_id]
            ).fetchall()
        }
    assert set(events) == {"order.handoff_requested", "billing.intent_recorded"}
    assert events["order.handoff_requested"]["destination"] == "warehouse"
    assert events["billing.intent_recorded"]["destination"] == "fiscal"
    payload = events["billing.intent_recorded"]["payload"]
    assert payload["order_id"] == str(result.order_id) and payload["warehouse_id"] == "CEN"
    assert payload["client"]["name"] == "Corralón del Sur"
    assert payload["lines"] == [
        {"sku": "COR-200", "quantity": 2, "unit_price_cents": 320_000, "amount_cents": 640_000},
        {"sku": "TOR-010", "quantity": 10, "unit_price_cents": 15_000, "amount_cents": 150_000},
    ]
    assert payload["total_cents"] == 790_000


def test_same_request_id_same_content_returns_original_order(db):
    cmd = command(db, [("CAB-045", 40)])
    first = create_order(db, cmd)
    second = create_order(db, cmd)
    assert (first.outcome, second.outcome) == (CONFIRMED, REPLAYED)
    assert second.order_id == first.order_id
    assert count(db, "SELECT count(*) FROM orders") == 1
    assert count(db, "SELECT count(*) FROM outbox_event") == 2
    assert stock(db, "CAB-045")["reserved"] == 40


@pytest.mark.parametrize(
    "lines",
    [
        [("tor-010", 5), ("cor-200", 1)],  # reordered, lower case
        [("  COR-200 ", 1), (" TOR-010", 5)],  # spaces
    ],
)
def test_same_content_written_differently_is_a_replay_not_a_conflict(db, lines):
    cmd = command(db, [("COR-200", 1), ("TOR-010", 5)])
    first = create_order(db, cmd)
    again = create_order(db, command(db, lines, request_id=cmd.request_id))
    assert (again.outcome, again.order_id) == (REPLAYED, first.order_id)
    assert count(db, "SELECT count(*) FROM orders") == 1


@pytest.mark.parametrize(
    "change",
    [
        {"lines": [("CAB-045", 10)]},
        {"warehouse": "NOR"},
        {"client": "Obras Rápidas SRL"},
    ],
)
def test_same_request_id_other_content_is_a_conflict_with_no_new_effect(db, change):
    cmd = command(db, [("CAB-045", 4)])
    original = create_order(db, cmd)
    before = [
        count(db, "SELECT count(*) FROM orders"),
        stock(db, "CAB-045")["reserved"],
        count(db, "SELECT count(*) FROM outbox_event"),
        exposure(db, "Corralón del Sur"),
    ]
    other = command(
        db,
        change.get("lines", [("CAB-045", 4)]),
        request_id=cmd.request_id,
        warehouse=change.get("warehouse", "CEN"),
        client=change.get("client", "Corralón del Sur"),
    )
    result = create_order(db, other)
    assert result.outcome == CONFLICT and not hasattr(result, "order_id")
    assert [
        count(db, "SELECT count(*) FROM orders"),
        stock(db, "CAB-045")["reserved"],
        count(db, "SELECT count(*) FROM outbox_event"),
        exposure(db, "Corralón del Sur"),
    ] == before
    assert count(db, "SELECT count(*) FROM idempotency_keys WHERE order_id = %s", [original.order_id]) == 1


def test_delivery_method_is_stored_but_changing_it_alone_replays(db):
    cmd = command(db, [("COR-200", 1)], delivery_method="retira en depósito")
    first = create_order(db, cmd)
    again = create_order(db, command(db, [("COR-200", 1)], request_id=cmd.request_id, delivery_method="envío"))
    assert again.outcome == REPLAYED and again.order_id == first.order_id
    assert count(db, "SELECT count(*) FROM orders WHERE delivery_method = 'retira en depósito'") == 1


def test_over_the_limit_waits_for_authorization_with_soft_reservations_and_no_events(db):
    result = create_order(db, command(db, [("COR-200", 16)], client="Obras Rápidas SRL"))  # 51,200.00 > 50,000.00
    assert (result.outcome, result.order_status) == (PENDING_AUTHORIZATION, "PENDIENTE_AUTORIZACION")
    assert count(db, "SELECT count(*) FROM orders WHERE billing_status = 'NO_APLICA'") == 1
    assert count(db, "SELECT count(*) FROM stock_reservation WHERE kind = 'BLANDA' AND expires_at IS NULL") == 1
    assert stock(db, "COR-200")["reserved"] == 16
    assert count(db, "SELECT count(*) FROM outbox_event") == 0
    assert exposure(db, "Obras Rápidas SRL") == 0


def test_an_order_reaching_exactly_the_limit_is_approved_and_one_box_more_waits(db):
    # Obras Rápidas SRL may owe 50,000.00: 10 × 3,200.00 + 120 × 150.00 is exactly that.
    first = create_order(db, command(db, [("COR-200", 10), ("TOR-010", 120)], client="Obras Rápidas SRL"))
    assert first.outcome == CONFIRMED and exposure(db, "Obras Rápidas SRL") == 5_000_000
    over = create_order(db, command(db, [("TOR-010", 1)], client="Obras Rápidas SRL"))
    assert over.outcome == PENDING_AUTHORIZATION
    assert exposure(db, "Obras Rápidas SRL") == 5_000_000


def test_platinum_over_its_limit_waits_too_while_rn02_is_blocked(db):
    # Ferretería Platino SA has 10,000.00 left; 12,500.00 exceeds it and no tolerance is invented (RN-02).
    result = create_order(db, command(db, [("COR-118", 1)], client="Ferretería Platino SA"))
    assert result.outcome == PENDING_AUTHORIZATION


def test_replay_shows_the_orders_current_state_not_the_original_one(db):
    cmd = command(db, [("COR-200", 16)], client="Obras Rápidas SRL")
    first = create_order(db, cmd)
    with db.transaction() as tx:  # the credit officer rejects it meanwhile (nexo/credit does this for real)
        tx.execute(
            "UPDATE orders SET status = 'RECHAZADO', decided_at = now(), decision_note = 'sin garantía',"
            " decided_by = (SELECT id FROM app_user WHERE username = 'laura') WHERE id = %s",
            [first.order_id],
        )
        tx.commit()
    again = create_order(db, cmd)
    assert (again.outcome, again.order_id, again.order_status) == (REPLAYED, first.order_id, "RECHAZADO")


@pytest.mark.parametrize(
    "lines, reasons",
    [
        ([("COR-118", 2)], [("COR-118", "insufficient_stock")]),
        ([("NOPE-404", 1), ("COR-200", 1)], [("NOPE-404", "invalid_sku")]),
        ([("PRC-000", 1)], [("PRC-000", "price_source_unavailable")]),
        (
            [("TOR-010", 1), ("CAB-045", 41), ("COR-118", 2)],
            [("CAB-045", "insufficient_stock"), ("COR-118", "insufficient_stock")],
        ),
    ],
)
def test_business_rejection_names_each_failing_line_and_persists_nothing(db, lines, reasons):
    result = create_order(db, command(db, lines))
    assert result.outcome == REJECTED
    assert [(p.sku, p.reason) for p in result.problems] == reasons
    assert_nothing_persisted(db)
    assert exposure(db, "Corralón del Sur") == 0


def test_rejected_request_id_is_evaluated_again_and_succeeds_once_stock_arrives(db):
    cmd = command(db, [("COR-118", 3)])
    assert create_order(db, cmd).outcome == REJECTED
    assert_nothing_persisted(db)
    with db.transaction() as tx:  # the truck arrives: two more units of COR-118 in CEN
        tx.execute(
            "UPDATE stock_level SET on_hand = on_hand + 2 FROM product p"
            " WHERE p.id = stock_level.product_id AND p.sku = 'COR-118' AND warehouse_id = 'CEN'"
        )
        tx.commit()
    retried = create_order(db, cmd)
    assert retried.outcome == CONFIRMED
    assert stock(db, "COR-118") == {"on_hand": 3, "reserved": 3}


@pytest.mark.parametrize(
    "cmd_change, field",
    [
        ({"client_id": uuid.UUID("00000000-0000-4000-8000-000000000001")}, "client_id"),
        ({"warehouse_id": "XXX"}, "deposit_id"),
        ({"lines": ()}, "lines"),
        ({"lines": (OrderLineRequest("COR-200", 0),)}, "lines"),
        ({"lines": (OrderLineRequest("COR-200", 100_001),)}, "lines"),
        ({"lines": (OrderLineRequest("cor-200", 1), OrderLineRequest("COR-200 ", 2))}, "lines"),
    ],
)
def test_malformed_commands_are_invalid_and_persist_nothing(db, cmd_change, field):
    base = command(db, [("COR-200", 1)])
    cmd = CreateOrder(**{**base.__dict__, **cmd_change})
    result = create_order(db, cmd)
    assert result.outcome == INVALID and field in result.field_errors
    assert_nothing_persisted(db)


def test_claim_reports_inserted_only_for_the_transaction_that_created_the_key(db):
    # ADR-007 relies on `xmax = 0` telling a fresh insert from the DO UPDATE path; this pins that
    # undocumented Postgres behaviour so an upgrade that changes it fails here, not in production.
    request_id, cid = uuid.uuid4(), client_id(db, "Corralón del Sur")
    with db.transaction() as tx:
        assert repository.claim_request(tx.conn, request_id, "h1", 1).inserted is True
        order_id = uuid.uuid4()
        tx.execute(
            "INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents)"
            " SELECT %s, %s, 'CEN', min(id), 'CONFIRMADO', 0 FROM app_user",
            [order_id, cid],
        )
        link_request_to_order(tx.conn, request_id, order_id)
        tx.commit()
    with db.transaction() as tx:
        claim = repository.claim_request(tx.conn, request_id, "h2", 1)
    assert (claim.inserted, claim.request_hash, claim.order_id) == (False, "h1", order_id)
