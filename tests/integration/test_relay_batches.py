"""The batched relay (ADR-008): coalesced commit-time wake-ups and batched claims, deliveries, records.

The guarantees stay those of ADR-004/ADR-014: each event of a batch has its own claim token, lease and
attempt row, its outcome is fenced by its own token, each attempt ends within its own deadline, and a
coalesced wake-up never leaves an event behind.
"""

from __future__ import annotations

import time

import pytest
from rq import Queue

from nexo.db import Database
from nexo.outbox import destinations, relay, wakeup
from nexo.outbox import repository as repo
from nexo.outbox.http_client import HttpClient
from tests.relay_fixtures import event_rows, insert_confirmed_orders, relay_settings, wait_until
from tests.relay_support import without_queued_wakeup


@pytest.fixture
def ctx(db, fakes):
    settings = relay_settings()  # delivery timeout 1 s, job timeout 2 s, lease 3 s
    context = relay.RelayContext(
        settings=settings,
        db=Database(settings.database_url, max_size=2),
        http=HttpClient(settings.relay.delivery_timeout_s),
        worker="test@batch",
    )
    yield context
    context.close()


def test_commit_time_wakeups_coalesce_into_one_waiting_drain_job(redis_client):
    settings = relay_settings()
    queue = Queue(settings.relay_queue, connection=redis_client, serializer="json")
    orders = [[f"o{n}-fiscal", f"o{n}-warehouse"] for n in range(5)]
    for ids in orders:
        wakeup.request_delivery(ids, connection=redis_client, settings=settings)
    assert queue.count == 1  # one job waiting, not one per order
    assert queue.jobs[0].args[0] == orders[0]
    # The waiting drain job covers every due event, so the sweeper sends no second wake-up for them.
    assert without_queued_wakeup(redis_client, settings, [e for ids in orders for e in ids]) == []

    # The job clears the flag as it starts, before its first claim: a commit after that rings again.
    wakeup.clear_pending(redis_client, settings.relay_queue)
    wakeup.request_delivery(["late-fiscal", "late-warehouse"], connection=redis_client, settings=settings)
    assert queue.count == 2


@pytest.mark.slow
def test_a_drain_job_delivers_every_event_whose_wakeup_it_coalesced(db, redis_client, fakes, relay):
    """No sweeper: only the one drain job can deliver the events of the 19 orders whose wake-up it absorbed."""
    orders = insert_confirmed_orders(db, 20)
    ids = [e for o in orders for e in (o.fiscal_event_id, o.warehouse_event_id)]
    for o in orders:
        wakeup.request_delivery([o.fiscal_event_id, o.warehouse_event_id], connection=redis_client, settings=relay_settings())
    assert Queue(relay_settings().relay_queue, connection=redis_client, serializer="json").count == 1
    relay.start_workers(1)
    wait_until(
        lambda: all(r["status"] == "ENTREGADO" for r in event_rows(db, ids).values()),
        timeout=30,
        message="the drain job delivered every coalesced event",
    )
    assert sorted(e["key"] for e in fakes.effects("fiscal")) == sorted(str(o.fiscal_event_id) for o in orders)
    assert sorted(e["key"] for e in fakes.effects("warehouse")) == sorted(str(o.warehouse_event_id) for o in orders)


@pytest.mark.slow
def test_a_drain_job_out_of_budget_rings_the_next_one(db, redis_client, fakes, relay):
    """A slow but answering destination: a job's budget (job timeout 2 s − one worst attempt) fits one
    batch, so the events left after it must be drained by the job it rings, not left for a sweeper
    (there is none here)."""
    fakes.set_mode("fiscal", "timeout_after", delay_s=0.4)  # applied, answered within the 1 s deadline
    orders = insert_confirmed_orders(db, 6)
    ids = [o.fiscal_event_id for o in orders]
    wakeup.request_delivery([str(i) for i in ids], connection=redis_client, settings=relay_settings())
    worker = relay.start_workers(1)[0]
    wait_until(
        lambda: all(r["status"] == "ENTREGADO" for r in event_rows(db, ids).values()),
        timeout=30,
        message="every event drained by the chain of drain jobs",
    )
    assert sorted(e["key"] for e in fakes.effects("fiscal")) == sorted(str(i) for i in ids)
    assert "budget spent" in relay.log(worker)  # it did take more than one job


def test_a_batch_is_delivered_concurrently(db, fakes, ctx):
    """Four POSTs that each take 0.6 s fit in one deadline (1 s) only if they run at the same time."""
    fakes.set_mode("fiscal", "timeout_after", delay_s=0.6)
    orders = insert_confirmed_orders(db, 4)
    started = time.monotonic()
    outcomes = relay.deliver_due(ctx, ids=[o.fiscal_event_id for o in orders], limit=4)
    elapsed = time.monotonic() - started
    assert outcomes == [relay.ENTREGADO] * 4
    assert elapsed < 1.5, f"the batch took {elapsed:.2f} s"
    assert len(fakes.effects("fiscal")) == 4


def test_each_attempt_of_a_batch_ends_at_its_own_deadline(db, fakes, ctx):
    fakes.set_mode("fiscal", "timeout_before", delay_s=3)
    orders = insert_confirmed_orders(db, 4)
    ids = [o.fiscal_event_id for o in orders]
    started = time.monotonic()
    outcomes = relay.deliver_due(ctx, ids=ids, limit=len(ids))
    elapsed = time.monotonic() - started
    assert outcomes == [relay.REINTENTO] * 4
    assert elapsed < 2.0, f"the batch took {elapsed:.2f} s"  # one deadline (1 s) for the batch, not four
    rows = event_rows(db, ids)
    assert {r["attempts"] for r in rows.values()} == {1}
    assert len({r["claim_token"] for r in rows.values()}) == 4  # each event its own claim
    with db.reading() as conn:
        attempts = conn.execute("SELECT * FROM delivery_attempt WHERE event_id = ANY(%s)", [ids]).fetchall()
    # Each ended by its own asyncio.timeout (1 s), not by the caller's fallback (deadline + 0.5 s).
    assert all(a["error"].startswith("Timeout") and 900 <= a["duration_ms"] < 1400 for a in attempts), [
        (a["error"], a["duration_ms"]) for a in attempts
    ]


def test_a_batch_records_each_outcome_fenced_by_its_own_claim_token(db, fakes, ctx):
    orders = insert_confirmed_orders(db, 3)
    ids = [o.fiscal_event_id for o in orders]
    with ctx.db.transaction() as tx:
        claimed = repo.claim_due(tx.conn, lease_s=3, worker=ctx.worker, limit=3, ids=ids, max_attempts=8)
        tx.commit()
    outgoing = [destinations.Outgoing(e["event_type"], e["id"], e["payload"]) for e in claimed]
    results = destinations.deliver_all(ctx.http, ctx.settings, outgoing)
    taken = claimed[1]
    with db.transaction() as tx:  # its lease expired and another claimant took it meanwhile
        tx.execute("UPDATE outbox_event SET claim_token = gen_random_uuid() WHERE id = %s", [taken["id"]])
        tx.commit()
    outcomes = relay.record_all(ctx, claimed, results)
    assert outcomes == [relay.ENTREGADO, relay.DESCARTADO, relay.ENTREGADO]
    rows = event_rows(db, ids)
    assert rows[str(taken["id"])]["status"] == "PENDIENTE"
    assert rows[str(taken["id"])]["claim_token"] != taken["claim_token"]
    with db.reading() as conn:
        attempts = {
            r["event_id"]: r for r in conn.execute("SELECT * FROM delivery_attempt WHERE event_id = ANY(%s)", [ids]).fetchall()
        }
        billed = conn.execute(
            "SELECT id, billing_status FROM orders WHERE id = ANY(%s)", [[o.order_id for o in orders]]
        ).fetchall()
    assert {e: a["outcome"] for e, a in attempts.items()} == {
        claimed[0]["id"]: "ENTREGADO",
        taken["id"]: "DESCARTADO_POR_LEASE",
        claimed[2]["id"]: "ENTREGADO",
    }
    assert all(a["finished_at"] is not None and a["http_status"] == 201 for a in attempts.values())
    by_order = {r["id"]: r["billing_status"] for r in billed}
    assert by_order[taken["aggregate_id"]] != "FACTURADO"
    assert [by_order[claimed[i]["aggregate_id"]] for i in (0, 2)] == ["FACTURADO", "FACTURADO"]
