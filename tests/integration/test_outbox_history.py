"""History out of the hot path (ADR-019, migration 0700): settled events are filed by month, the relay reads
the live partition alone, and a month past the retention is dropped whole — on real Postgres, with real
workers and fakes where an event has to travel."""

from __future__ import annotations

import dataclasses
import json
import re
import signal
import subprocess
import sys
import threading
from datetime import date

import psycopg
import pytest

from nexo.db import Database
from nexo.deadletters import service as dead_letters
from nexo.deadletters.retention import purge_dead_letters, run_retention
from nexo.maintenance import MaintenanceRunner
from nexo.ops import queries as ops
from nexo.orders import cancel
from nexo.orders.service import create_order
from nexo.outbox import history
from nexo.outbox import repository as outbox
from nexo.outbox.dead_letter import open_dead_letter
from nexo.outbox.wakeup import request_delivery
from tests.dead_letter_factory import audit_rows, make_dead_letter, make_order, row
from tests.helpers import ROOT
from tests.integration.order_helpers import command, user_id
from tests.relay_fixtures import insert_confirmed_orders, relay_settings, wait_until

MONTH_PARTITION = re.compile(r"_\d{4}_\d{2}$")


@pytest.fixture(autouse=True)
def no_months(clean_state, db):
    """No month of an earlier test: the clean database empties the partitions but keeps them."""
    with db.transaction() as tx:
        for month in history.months_filed(tx.conn):
            events, attempts = (history.partition_name(t, month) for t in history.TABLES)
            tx.execute(f"DROP TABLE {attempts}")
            tx.execute(f"ALTER TABLE outbox_event DETACH PARTITION {events}")
            tx.execute(f"DROP TABLE {events}")
        tx.commit()


def where(db, event_id) -> str:
    """The partition an event's row is in."""
    return row(db, "SELECT tableoid::regclass::text AS t FROM outbox_event WHERE id = %s", [event_id])["t"]


def attempt_partitions(db, event_id) -> set[str]:
    with db.reading() as conn:
        rows = conn.execute("SELECT tableoid::regclass::text AS t FROM delivery_attempt WHERE event_id = %s", [event_id])
        return {r["t"] for r in rows.fetchall()}


def settle(db, event_id, *, status: str = "ENTREGADO", at: str = "now() - interval '2 hours'", attempts: int = 1) -> None:
    """Make an event look delivered (or withdrawn) at `at`, with `attempts` closed attempt rows, as the relay leaves it."""
    with db.transaction() as tx:
        for n in range(1, attempts + 1):
            tx.execute(
                "INSERT INTO delivery_attempt (event_id, attempt_no, claim_token, worker, started_at, finished_at, outcome)"
                f" VALUES (%s, %s, gen_random_uuid(), 'test', {at}, {at}, %s)",
                [event_id, n, status],
            )
        stamp = "delivered_at" if status == "ENTREGADO" else "withdrawn_at"
        tx.execute(
            f"UPDATE outbox_event SET status = %s, attempts = %s, {stamp} = {at} WHERE id = %s", [status, attempts, event_id]
        )
        _entered_by(tx, event_id, at)
        tx.commit()


def _entered_by(tx, event_id, at: str) -> None:
    """Move the event's order back to `at` when it was entered later: an event never settles before its order
    was entered, and an order's events are read from the UTC day it was entered (partitions.settled_since).
    Between 00:00 and 02:00 UTC "two hours ago" is the day before."""
    tx.execute(
        f"UPDATE orders SET created_at = least(created_at, {at})"
        " WHERE id = (SELECT aggregate_id FROM outbox_event WHERE id = %s)",
        [event_id],
    )


def delivered(db, order_id) -> int:
    """How many of an order's events are ENTREGADO."""
    return row(db, "SELECT count(*) AS n FROM outbox_event WHERE aggregate_id = %s AND status = 'ENTREGADO'", [order_id])["n"]


def add_delivered_two_days_ago(tx, order_id, count: int) -> None:
    """`count` fiscal events of one order, delivered two days ago: history ready to be filed."""
    tx.execute(
        "INSERT INTO outbox_event (id, aggregate_id, event_type, destination, payload, status, attempts, delivered_at)"
        " SELECT gen_random_uuid(), %s, 'billing.intent_recorded', 'fiscal', '{}', 'ENTREGADO', 1,"
        "        now() - interval '2 days' FROM generate_series(1, %s)",
        [order_id, count],
    )


def file_all(db, **kwargs) -> history.FilingReport:
    return history.file_settled_events(db, **kwargs)


def test_a_settled_event_moves_to_its_month_with_its_attempts_and_reads_as_before(db):
    [order] = insert_confirmed_orders(db, 1)
    settle(db, order.fiscal_event_id, at="'2026-11-20 23:30+00'", attempts=2)
    before = row(db, "SELECT * FROM outbox_event WHERE id = %s", [order.fiscal_event_id])
    report = file_all(db)
    assert report.filed == 1
    assert where(db, order.fiscal_event_id) == "outbox_event_2026_11"
    assert attempt_partitions(db, order.fiscal_event_id) == {"delivery_attempt_2026_11"}
    after = row(db, "SELECT * FROM outbox_event WHERE id = %s", [order.fiscal_event_id])
    assert after.pop("settled_on") == date(2026, 11, 20) and before.pop("settled_on") == date(9999, 12, 31)
    assert after == before  # the contract's columns read the same wherever the row is
    assert where(db, order.warehouse_event_id) == "outbox_event_live"  # still pending: it stays
    # The month's partitions were added for the filing, and this month's and the next one's ahead of need.
    with db.reading() as conn:
        months = history.months_filed(conn)
    assert date(2026, 11, 1) in months and len(months) >= 3


def test_the_day_is_the_utc_day_of_the_delivery(db):
    [order] = insert_confirmed_orders(db, 1)
    settle(db, order.fiscal_event_id, at="'2026-10-31 22:00-03'")  # 1 November in UTC
    file_all(db)
    assert row(db, "SELECT settled_on FROM outbox_event WHERE id = %s", [order.fiscal_event_id])["settled_on"] == date(
        2026, 11, 1
    )


def test_what_may_still_change_stays_in_the_live_partition(db):
    orders = insert_confirmed_orders(db, 5)
    pending = orders[0].fiscal_event_id  # never delivered
    settle(db, orders[1].fiscal_event_id, at="now() - interval '10 minutes'")  # settled, but within the hour
    leased = orders[2].fiscal_event_id  # withdrawn while a worker may still be sending it
    settle(db, leased, status="RETIRADO")
    open_attempt = orders[3].fiscal_event_id  # delivered, but an attempt row was never closed
    settle(db, open_attempt)
    original = orders[4].fiscal_event_id  # delivered, and a cancellation waiting on it
    settle(db, original)
    with db.transaction() as tx:
        tx.execute("UPDATE outbox_event SET locked_until = now() + interval '1 minute' WHERE id = %s", [leased])
        tx.execute("UPDATE delivery_attempt SET finished_at = NULL, outcome = NULL WHERE event_id = %s", [open_attempt])
        outbox.add_event(
            tx.conn,
            order_id=orders[4].order_id,
            event_type="billing.intent_cancelled",
            payload={"invoice_key": str(original)},
            request_id=None,
            depends_on=original,
        )
        tx.commit()
    failed = make_dead_letter(db)["event_id"]  # FALLIDO: a person may replay it
    with db.transaction() as tx:
        tx.execute("UPDATE outbox_event SET created_at = created_at - interval '2 days' WHERE id = %s", [failed])
        tx.commit()
    assert file_all(db).filed == 0
    for event_id in (pending, orders[1].fiscal_event_id, leased, open_attempt, original, failed):
        assert where(db, event_id) == "outbox_event_live", event_id
    # Once the cancellation has settled and been filed itself, its original follows on the next pass.
    with db.transaction() as tx:
        tx.execute(
            "UPDATE outbox_event SET status = 'ENTREGADO', delivered_at = now() - interval '2 hours' WHERE depends_on = %s",
            [original],
        )
        tx.commit()
    assert file_all(db).filed == 1  # the cancellation: its original still had a live dependant when the pass began
    assert file_all(db).filed == 1
    assert where(db, original) != "outbox_event_live"


def test_filing_skips_an_order_a_cancel_holds_and_a_cancel_waits_for_filing_without_failing(db, settings):
    held, other = insert_confirmed_orders(db, 2)
    for order in (held, other):
        settle(db, order.fiscal_event_id)
        settle(db, order.warehouse_event_id)
    # 1. A transaction holds the order the way a cancel or the relay's record does: its events stay.
    with psycopg.connect(settings.database_url) as holder:
        holder.execute("SELECT id FROM orders WHERE id = %s FOR NO KEY UPDATE", [held.order_id])
        assert file_all(db).filed == 2
        holder.rollback()
    assert where(db, held.fiscal_event_id) == "outbox_event_live"
    assert where(db, other.fiscal_event_id) != "outbox_event_live"
    # 2. A cancel that comes while the order's events are being moved waits for the move, then sees the
    #    rows where they went (a lock on a moved row would fail instead: the reason for the order's lock).
    mover = Database(settings.database_url, max_size=1, name="mover")
    try:
        with mover.transaction() as tx:
            with db.reading() as conn:
                months = history.months_filed(conn)
            assert history.file_batch(tx.conn, months) == 2
            outcome: list = []
            cancelling = threading.Thread(
                target=lambda: outcome.append(
                    cancel.cancel_order(
                        db, cancel.CancelOrder(held.order_id, user_id(db, "vendedor1"), "vendedor1", "ya no lo quiere", False)
                    )
                )
            )
            cancelling.start()
            cancelling.join(timeout=1.5)
            assert cancelling.is_alive(), "the cancel should wait for the order the move holds"
            tx.commit()
        cancelling.join(timeout=30)
    finally:
        mover.close()
    assert isinstance(outcome[0], cancel.Cancelled), outcome
    with db.reading() as conn:
        rows = conn.execute(
            "SELECT event_type, status, depends_on, tableoid::regclass::text AS t FROM outbox_event WHERE aggregate_id = %s",
            [held.order_id],
        ).fetchall()
    cancellations = {r["event_type"]: r for r in rows if r["depends_on"] is not None}
    assert set(cancellations) == {"billing.intent_cancelled", "order.handoff_cancelled"}
    assert all(r["t"] == "outbox_event_live" and r["status"] == "PENDIENTE" for r in cancellations.values())


class Explaining:
    """A connection that EXPLAINs every statement before running it, and keeps the relations each plan reads."""

    def __init__(self, conn):
        self.conn = conn
        self.read: list[tuple[str, set[str]]] = []

    def execute(self, query, params=None):
        plan = self.conn.execute("EXPLAIN (FORMAT JSON) " + query, params).fetchone()
        found: set[str] = set()

        def walk(node):
            if "Relation Name" in node:
                found.add(node["Relation Name"])
            for child in node.get("Plans", []):
                walk(child)

        walk((plan["QUERY PLAN"] if isinstance(plan, dict) else plan[0])[0]["Plan"])
        self.read.append((query, found))
        return self.conn.execute(query, params)


def test_every_statement_of_the_relay_reads_the_live_partition_alone(db, settings):
    # Three months of history beside the live partition.
    old = insert_confirmed_orders(db, 3)
    for order, month in zip(old, ("2026-08-10", "2026-09-10", "2026-10-10"), strict=True):
        settle(db, order.fiscal_event_id, at=f"'{month} 12:00+00'")
        settle(db, order.warehouse_event_id, at=f"'{month} 12:00+00'")
    assert file_all(db).filed == 6
    [order] = insert_confirmed_orders(db, 1)
    with db.transaction() as tx:
        conn = Explaining(tx.conn)
        [claimed] = outbox.claim_due(conn, lease_s=30, worker="t", max_attempts=8, limit=4, destination="fiscal")
        outbox.claim_due(conn, lease_s=30, worker="t", max_attempts=8, limit=1, ids=[order.warehouse_event_id])
        outbox.due_event_ids(conn, limit=10, max_attempts=8)
        kept = outbox.record_outcomes(conn, [(claimed["id"], claimed["claim_token"], "FALLIDO", 0.0, "x")])
        assert kept == {claimed["id"]}
        outbox.close_attempts(conn, [(claimed["attempt_id"], "FALLIDO", 422, "x", 5)])
        open_dead_letter(
            conn, event_id=claimed["id"], destination="fiscal", attempts=1, last_error="x", http_status=422, error_class=None
        )
        outbox.requeue_events(conn, event_ids=[claimed["id"]], destination="fiscal")
        outbox.release_withdrawn(conn, [(claimed["id"], claimed["claim_token"])])
        outbox.lock_spent(conn, max_attempts=1, limit=10)
        outbox.mark_spent(conn, order.warehouse_event_id, error="x")
        outbox.close_open_attempts(conn, order.warehouse_event_id, outcome="SIN_RESULTADO", error="x")
        outbox.withdraw(conn, [order.fiscal_event_id])  # rolled back: never committed
    assert len(conn.read) >= 12
    for query, relations in conn.read:
        outbox_relations = {r for r in relations if r.startswith(("outbox_event", "delivery_attempt"))}
        assert not any(MONTH_PARTITION.search(r) for r in outbox_relations), (query, relations)


def test_a_cancel_after_its_original_was_filed_reaches_the_destination_after_it(db, redis_client, fakes, relay):
    relay.start_workers(1)
    relay.start_sweepers(1)
    result = create_order(db, command(db, [("COR-200", 1)]))
    with db.reading() as conn:
        found = conn.execute("SELECT id, event_type FROM outbox_event WHERE aggregate_id = %s", [result.order_id])
        ids_by_type = {r["event_type"]: r["id"] for r in found.fetchall()}
    ids = list(ids_by_type.values())
    request_delivery(ids, connection=redis_client, settings=relay_settings())
    wait_until(
        lambda: delivered(db, result.order_id) == 2,
        message="both originals delivered",
    )
    with db.transaction() as tx:
        tx.execute(
            "UPDATE outbox_event SET delivered_at = delivered_at - interval '2 hours' WHERE aggregate_id = %s", [result.order_id]
        )
        tx.execute("UPDATE orders SET created_at = created_at - interval '2 hours' WHERE id = %s", [result.order_id])
        tx.commit()
    assert file_all(db).filed == 2
    cancelled = cancel.cancel_order(
        db, cancel.CancelOrder(result.order_id, user_id(db, "vendedor1"), "vendedor1", "lo anuló el cliente", False)
    )
    assert isinstance(cancelled, cancel.Cancelled)
    wait_until(
        lambda: delivered(db, result.order_id) == 4,
        timeout=40,
        message="both cancellations delivered",
    )
    invoice = ids_by_type["billing.intent_recorded"]
    assert where(db, invoice) != "outbox_event_live"
    kinds = [(e["kind"], e["payload"].get("invoice_key") or e["key"]) for e in fakes.effects("fiscal")]
    assert kinds == [("invoice", str(invoice)), ("credit_note", str(invoice))]
    assert row(db, "SELECT billing_status FROM orders WHERE id = %s", [result.order_id])["billing_status"] == "ANULADA"


def test_a_month_past_the_retention_is_dropped_whole_and_audited(db):
    september, november = insert_confirmed_orders(db, 2)
    for event_id in (september.fiscal_event_id, september.warehouse_event_id):
        settle(db, event_id, at="'2026-09-15 12:00+00'", attempts=2)
    settle(db, november.fiscal_event_id, at="'2026-11-20 12:00+00'")
    assert file_all(db).filed == 3
    # 30 days before 7 December is 7 November: September ended before it, November did not.
    dropped = history.drop_expired_months(db, older_than_days=30, today=date(2026, 12, 7))
    assert dropped.dropped == {date(2026, 9, 1): 2} and dropped.kept == {}
    with db.reading() as conn:
        assert conn.execute("SELECT to_regclass('outbox_event_2026_09') AS t").fetchone()["t"] is None
        assert conn.execute("SELECT to_regclass('delivery_attempt_2026_09') AS t").fetchone()["t"] is None
        assert date(2026, 11, 1) in history.months_filed(conn)
    for gone in (september.fiscal_event_id, september.warehouse_event_id):
        assert row(db, "SELECT count(*) AS n FROM outbox_event WHERE id = %s", [gone])["n"] == 0
        assert row(db, "SELECT count(*) AS n FROM delivery_attempt WHERE event_id = %s", [gone])["n"] == 0
    assert where(db, november.fiscal_event_id) == "outbox_event_2026_11"
    [trace] = audit_rows(db, "outbox_event.purged")
    assert trace["object_id"] == "outbox_event_2026_09"
    assert trace["details"] == {"deleted": 2, "older_than_days": 30, "month": "2026-09"}


def test_a_month_a_dead_letter_points_into_waits_for_the_dead_letter_purge(db, settings):
    made = make_dead_letter(db)
    assert isinstance(dead_letters.replay(db, made["id"], "marta"), dead_letters.Done)
    with db.transaction() as tx:  # delivered after the replay, in August; the dead letter resolved then too
        tx.execute(
            "UPDATE outbox_event SET status = 'ENTREGADO', delivered_at = '2026-08-20 12:00+00' WHERE id = %s",
            [made["event_id"]],
        )
        tx.execute("UPDATE dead_letter SET resolved_at = '2026-08-20 11:00+00' WHERE id = %s", [made["id"]])
        tx.commit()
    assert file_all(db).filed == 1
    assert row(db, "SELECT event_settled_on FROM dead_letter WHERE id = %s", [made["id"]])["event_settled_on"] == date(
        2026, 8, 20
    )
    kept = history.drop_expired_months(db, older_than_days=30, today=date(2026, 12, 7))
    assert kept.dropped == {} and kept.kept == {date(2026, 8, 1): "dead_letter"}
    assert where(db, made["event_id"]) == "outbox_event_2026_08"  # nothing of it went
    assert purge_dead_letters(db, destination="fiscal", grace_days=90) == 1
    assert history.drop_expired_months(db, older_than_days=30, today=date(2026, 12, 7)).dropped == {date(2026, 8, 1): 1}


def test_the_retention_pass_drops_months_and_says_so(db, settings):
    [order] = insert_confirmed_orders(db, 1)
    settle(db, order.fiscal_event_id, at="now() - interval '400 days'")
    file_all(db)
    report = run_retention(db, dataclasses.replace(settings, outbox_retention_days=90))
    assert list(report.months_dropped.values()) == [1] and report.failures == []
    assert row(db, "SELECT count(*) AS n FROM outbox_event WHERE id = %s", [order.fiscal_event_id])["n"] == 0
    # With no retention decided (OUTBOX-RETENTION), no month is ever dropped.
    [kept] = insert_confirmed_orders(db, 1)
    settle(db, kept.fiscal_event_id, at="now() - interval '400 days'")
    file_all(db)
    assert run_retention(db, dataclasses.replace(settings, outbox_retention_days=None)).months_dropped == {}
    assert where(db, kept.fiscal_event_id) != "outbox_event_live"


def test_the_maintenance_runner_files_history_while_it_leads(db, settings):
    [order] = insert_confirmed_orders(db, 1)
    settle(db, order.fiscal_event_id)
    runner = MaintenanceRunner(db, settings, retention_every_s=86400)
    assert runner.tick()
    assert where(db, order.fiscal_event_id) != "outbox_event_live"
    runner.release()


def test_a_second_runner_adding_the_same_month_is_no_error(db, settings):
    with db.transaction() as tx:  # another runner is adding the month and has not committed yet
        history.add_month(tx.conn, date(2031, 5, 1))
        racing: list = []
        second = threading.Thread(target=lambda: racing.append(history.ensure_months(db, [date(2031, 5, 1)])))
        second.start()
        second.join(timeout=0.5)
        tx.commit()
    second.join(timeout=30)
    assert racing[0].months_added == []  # the other runner's: this one found it there, or gave way
    with db.reading() as conn:
        assert date(2031, 5, 1) in history.months_filed(conn)


def test_the_live_partition_holds_none_of_the_history(db):
    """Filed history leaves nothing behind in the live partition: its rows are the work still to do."""
    with db.transaction() as tx:
        order_id = make_order(tx.conn)
        tx.execute(
            "INSERT INTO outbox_event (id, aggregate_id, event_type, destination, payload, status, attempts, delivered_at)"
            " SELECT gen_random_uuid(), %s, 'billing.intent_recorded', 'fiscal', %s, 'ENTREGADO', 1,"
            "        now() - interval '3 days' - make_interval(hours => g)"
            "   FROM generate_series(1, 3000) AS g",
            [order_id, json.dumps({"order_id": str(order_id)})],
        )
        tx.commit()
    pending = insert_confirmed_orders(db, 2)
    assert file_all(db).filed == 3000
    with db.reading() as conn:
        live = conn.execute("SELECT id FROM outbox_event_live").fetchall()
        assert {r["id"] for r in live} == {e for o in pending for e in (o.fiscal_event_id, o.warehouse_event_id)}
        assert conn.execute("SELECT count(*) AS n FROM outbox_event").fetchone()["n"] == 3004


def test_an_event_deleted_takes_its_attempts_and_an_attempt_needs_its_event(db):
    """ON DELETE CASCADE's behaviour kept by a trigger, live or filed; the key checked at the commit (migration 0700)."""
    live, filed = insert_confirmed_orders(db, 2)
    settle(db, live.fiscal_event_id, at="now() - interval '10 minutes'", attempts=2)  # stays live
    settle(db, filed.fiscal_event_id, at="'2026-10-10 12:00+00'", attempts=2)
    assert file_all(db).filed == 1
    with db.transaction() as tx:  # an operator's DELETE, as an outside test may do one
        tx.execute("DELETE FROM outbox_event WHERE id = ANY(%s)", [[live.fiscal_event_id, filed.fiscal_event_id]])
        tx.commit()
    for event_id in (live.fiscal_event_id, filed.fiscal_event_id):
        assert attempt_partitions(db, event_id) == set()
    with pytest.raises(psycopg.errors.ForeignKeyViolation), db.transaction() as tx:
        tx.execute(
            "INSERT INTO delivery_attempt (event_id, attempt_no, claim_token, worker, started_at)"
            " VALUES (gen_random_uuid(), 1, gen_random_uuid(), 'test', now())"
        )
        tx.commit()


def test_a_long_history_is_filed_in_slices_between_lease_renewals(db, settings, monkeypatch):
    with db.transaction() as tx:
        order_id = make_order(tx.conn)
        add_delivered_two_days_ago(tx, order_id, 25)
        tx.commit()
    monkeypatch.setattr("nexo.maintenance.HISTORY_PASS_S", 0.0)  # one batch, then the pass yields
    monkeypatch.setattr("nexo.outbox.history.BATCH", 10)
    runner = MaintenanceRunner(db, settings, retention_every_s=86400)
    now = [1000.0]
    runner.clock = lambda: now[0]
    assert runner.tick()
    assert row(db, "SELECT count(*) AS n FROM outbox_event_live")["n"] == 15  # one batch of 10 went
    now[0] += 5  # the next tick renews the lease and files the next slice at once, not in ten minutes
    assert runner.tick()
    assert row(db, "SELECT count(*) AS n FROM outbox_event_live")["n"] == 5
    now[0] += 5
    assert runner.tick()
    now[0] += 5
    assert runner.tick()  # the last slice was short: nothing more is due before HISTORY_EVERY_S
    assert row(db, "SELECT count(*) AS n FROM outbox_event_live")["n"] == 0
    assert runner._next["history"] > now[0] + 60
    runner.release()


def test_the_operations_chart_reads_a_filed_delivery_of_the_last_day_as_before(db):
    """The pending-age chart reads the last day's deliveries from their months too (nexo/ops/queries.py)."""
    [order] = insert_confirmed_orders(db, 1)
    with db.transaction() as tx:  # entered five hours ago, delivered three hours ago: pending across two marks
        tx.execute("UPDATE outbox_event SET created_at = now() - interval '5 hours' WHERE id = %s", [order.fiscal_event_id])
        tx.commit()
    settle(db, order.fiscal_event_id, at="now() - interval '3 hours'")
    with db.reading() as conn:
        before = ops.pending_age_history(conn)["fiscal"]
    assert file_all(db).filed == 1
    assert where(db, order.fiscal_event_id) != "outbox_event_live"
    with db.reading() as conn:
        after = ops.pending_age_history(conn)["fiscal"]
    assert max(before) > 3600 and [round(a) for a in after] == [round(b) for b in before]


def test_a_filing_pass_killed_mid_work_loses_nothing_and_the_next_one_finishes(db, settings):
    """kill -9 of a process filing (the maintenance runner's pass): each batch is one transaction, so what it
    had not committed stays live with its attempts, and the next pass files the rest (ADR-019)."""
    with db.transaction() as tx:
        order_id = make_order(tx.conn)
        add_delivered_two_days_ago(tx, order_id, 30000)
        tx.execute(
            "INSERT INTO delivery_attempt (event_id, attempt_no, claim_token, worker, started_at, finished_at, outcome)"
            " SELECT id, 1, gen_random_uuid(), 'test', delivered_at, delivered_at, 'ENTREGADO' FROM outbox_event_live"
        )
        tx.commit()
    filing = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from nexo.db import Database; from nexo.outbox import history;"
            " history.file_settled_events(Database(sys.argv[1], max_size=2), batch=200)",
            settings.database_url,
        ],
        cwd=ROOT,
    )
    try:
        wait_until(lambda: row(db, "SELECT count(*) AS n FROM outbox_event_live")["n"] < 30000, timeout=60)
        filing.send_signal(signal.SIGKILL)
        filing.wait(timeout=10)
    finally:
        if filing.poll() is None:
            filing.kill()
    left = row(db, "SELECT count(*) AS n FROM outbox_event_live")["n"]
    assert 0 < left < 30000, "the pass was killed mid-work"
    counts = row(
        db,
        "SELECT (SELECT count(*) FROM outbox_event) AS events, (SELECT count(*) FROM delivery_attempt) AS attempts,"
        " (SELECT count(*) FROM delivery_attempt_live) AS live_attempts",
    )
    assert counts == {"events": 30000, "attempts": 30000, "live_attempts": left}  # none lost, none split from its event
    assert file_all(db).filed == left
    assert row(db, "SELECT count(*) AS n FROM outbox_event_live")["n"] == 0
    assert row(db, "SELECT count(*) AS n FROM delivery_attempt")["n"] == 30000
