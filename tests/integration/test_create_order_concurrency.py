"""create_order under real concurrency: real threads, each with its own connection, on real Postgres."""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from nexo.orders import repository
from nexo.orders.commands import CONFIRMED, INSUFFICIENT_STOCK, PENDING_AUTHORIZATION, REJECTED, REPLAYED
from nexo.orders.service import command_fingerprint, create_order
from tests.integration.order_helpers import command, count, exposure, insert_order, link_request_to_order, stock


def run_together(db, commands):
    """Run create_order for every command at once (a barrier releases them together); results in order."""
    barrier = threading.Barrier(len(commands))

    def call(cmd):
        barrier.wait()
        return create_order(db, cmd)

    with ThreadPoolExecutor(max_workers=len(commands)) as pool:
        futures = [pool.submit(call, cmd) for cmd in commands]
        return [f.result() for f in futures]  # re-raises any exception (deadlock, check violation, ...)


def add_clients(db, n: int, limit_cents: int = 1_000_000_000) -> list[str]:
    """n extra REGULAR clients with a roomy limit, so the orders of a test do not share a client row."""
    names = [f"Cliente de prueba {i:02d}" for i in range(n)]
    with db.transaction() as tx:
        for name in names:
            tx.execute("INSERT INTO client (name, tier, credit_limit_cents) VALUES (%s, 'REGULAR', %s)", [name, limit_cents])
        tx.commit()
    return names


def wait_until_blocked_on_a_lock(db, query_fragment: str) -> None:
    """Return once some backend running query_fragment waits on a lock (bounded so a bug fails, not hangs)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with db.reading() as conn:
            if conn.execute(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
                [f"%{query_fragment}%"],
            ).fetchone()["n"]:
                return
        time.sleep(0.01)
    raise AssertionError(f"no backend ever waited on a lock while running {query_fragment!r}")


def test_twenty_simultaneous_requests_with_one_request_id_make_one_order_and_all_get_it(db):
    cmd = command(db, [("CAB-045", 40)])
    results = run_together(db, [cmd] * 20)
    assert sorted(r.outcome for r in results) == [CONFIRMED] + [REPLAYED] * 19
    assert {r.order_id for r in results} == {results[0].order_id}
    assert count(db, "SELECT count(*) FROM orders") == 1
    assert count(db, "SELECT count(*) FROM outbox_event") == 2
    assert stock(db, "CAB-045") == {"on_hand": 40, "reserved": 40}


def _hold_claim_in_open_transaction(db, cmd, *, with_order: bool):
    """Open a transaction that claimed cmd's key (and made its order) and keep it open; returns (tx ctx, order)."""
    ctx = db.transaction()
    tx = ctx.__enter__()
    repository.claim_request(tx.conn, cmd.request_id, command_fingerprint(cmd), 1)
    order_id = None
    if with_order:
        order_id = uuid.uuid4()
        insert_order(
            tx.conn,
            order_id=order_id,
            client_id=cmd.client_id,
            warehouse_id="CEN",
            salesperson_id=cmd.salesperson_id,
            status="CONFIRMADO",
            total_cents=0,
            billing_status="NO_APLICA",
            delivery_method=None,
        )
        link_request_to_order(tx.conn, cmd.request_id, order_id)
    return ctx, tx, order_id


def test_second_request_with_the_same_key_waits_for_the_first_and_returns_its_order(db):
    cmd = command(db, [("COR-200", 1)])
    ctx, tx, order_id = _hold_claim_in_open_transaction(db, cmd, with_order=True)
    with ThreadPoolExecutor(max_workers=1) as pool:
        second = pool.submit(create_order, db, cmd)
        wait_until_blocked_on_a_lock(db, "INSERT INTO idempotency_keys")
        assert not second.done()  # it waits on the key row instead of failing or creating
        tx.commit()
        ctx.__exit__(None, None, None)
        result = second.result()
    assert (result.outcome, result.order_id) == (REPLAYED, order_id)
    assert count(db, "SELECT count(*) FROM orders") == 1


def test_second_request_is_evaluated_afresh_when_the_first_rolls_back(db):
    cmd = command(db, [("COR-200", 1)])
    ctx, tx, _ = _hold_claim_in_open_transaction(db, cmd, with_order=False)
    with ThreadPoolExecutor(max_workers=1) as pool:
        second = pool.submit(create_order, db, cmd)
        wait_until_blocked_on_a_lock(db, "INSERT INTO idempotency_keys")
        ctx.__exit__(None, None, None)  # not committed: rolls back, like a business rejection
        result = second.result()
    assert result.outcome == CONFIRMED
    assert count(db, "SELECT count(*) FROM orders") == 1 and stock(db, "COR-200")["reserved"] == 1


def test_thirty_simultaneous_orders_for_the_last_unit_exactly_one_wins(db):
    clients = add_clients(db, 30)  # one client each: the race is on the stock row alone
    results = run_together(db, [command(db, [("COR-118", 1)], client=name) for name in clients])
    winners = [r for r in results if r.outcome == CONFIRMED]
    losers = [r for r in results if r.outcome == REJECTED]
    assert len(winners) == 1 and len(losers) == 29
    assert all(r.reasons == (INSUFFICIENT_STOCK,) for r in losers)
    assert stock(db, "COR-118") == {"on_hand": 1, "reserved": 1}
    assert count(db, "SELECT count(*) FROM stock_reservation") == 1
    assert count(db, "SELECT count(*) FROM idempotency_keys") == 1  # the losers left no key behind


def test_orders_with_the_same_lines_in_opposite_order_never_deadlock(db):
    first, second = add_clients(db, 2)  # distinct clients, so only the stock rows are shared
    skus = ["CAB-045", "COR-200", "TOR-010"]
    for _ in range(15):
        results = run_together(
            db,
            [
                command(db, [(sku, 1) for sku in skus], client=first),
                command(db, [(sku, 1) for sku in reversed(skus)], client=second),
            ],
        )
        assert [r.outcome for r in results] == [CONFIRMED, CONFIRMED]
    assert stock(db, "CAB-045")["reserved"] == 30


def test_concurrent_orders_of_one_client_never_approve_past_its_limit(db):
    # Obras Rápidas SRL: limit 50,000.00, exposure 0. Each order is 4 × 3,200.00 = 12,800.00, so only
    # three fit; the other seven must wait for credit, however the ten interleave.
    results = run_together(db, [command(db, [("COR-200", 4)], client="Obras Rápidas SRL") for _ in range(10)])
    outcomes = [r.outcome for r in results]
    assert outcomes.count(CONFIRMED) == 3 and outcomes.count(PENDING_AUTHORIZATION) == 7
    assert exposure(db, "Obras Rápidas SRL") == 3 * 1_280_000 <= 5_000_000
    assert count(db, "SELECT count(*) FROM outbox_event") == 6
    assert stock(db, "COR-200")["reserved"] == 40
