"""The floor scripts send what create_order and the relay send (bench/floor.py, docs/performance.md).

bench/order_floor.sql and bench/delivery_floor.sql are compared, statement by statement, with the SQL the
real paths send on real Postgres, parameters and casts aside: a statement added to, removed from or changed
in either path fails here until its floor script follows. Both scripts then run under pgbench on the test
database and do what the paths do (orders confirmed with their reservations; events ENTREGADO).
"""

from __future__ import annotations

import re
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

from bench import data as bench_data
from bench import floor
from nexo.db import Transaction
from nexo.orders.commands import Confirmed
from nexo.orders.service import create_order
from nexo.outbox import relay
from nexo.outbox import repository as outbox_repo
from nexo.outbox.destinations import DELIVERED, DeliveryResult
from tests.integration.order_helpers import command

# A parameter (psycopg's %(name)s / %s, pgbench's :name, a NULL sent as one) and the cast that follows it.
_PARAMETER = re.compile(r"(%\(\w+\)[sb]|%[sb]|(?<![:\w]):[A-Za-z_]\w*|\bNULL\b)(::\w+(\[\])?)?")  # %b: binary, the same parameter


def normalised(sql: str) -> str:
    """The statement without comments, parameters (each a ?), casts of parameters and layout."""
    sql = re.sub(r"--[^\n]*", "", sql)
    sql = _PARAMETER.sub("?", sql)
    sql = re.sub(r"\bLIMIT \d+", "LIMIT ?", sql)  # the claim's batch, written in (claim_sql) or bound (the script)
    return " ".join(sql.split()).rstrip(";").strip()


def script_statements(path: Path) -> list[str]:
    """The SQL statements of a pgbench script in order (both branches of an \\if), meta-commands left out."""
    statements, current = [], []
    for line in path.read_text().splitlines():
        bare = re.sub(r"--.*", "", line).strip()
        if bare.startswith("\\"):
            if bare.startswith("\\gset") and current:
                statements.append("\n".join(current))
                current = []
            continue
        if not bare:
            continue
        current.append(line)
        if bare.endswith(";"):
            statements.append("\n".join(current))
            current = []
    assert not current, f"{path.name}: a statement without its end"
    return [normalised(s) for s in statements]


def between(statements: list[str], first: str, last: str) -> list[list[str]]:
    """The runs of statements between each `first` and the next `last` (the script's transactions)."""
    runs, inside = [], None
    for statement in statements:
        if statement == first:
            inside = []
        elif statement == last and inside is not None:
            runs.append(inside)
            inside = None
        elif inside is not None:
            inside.append(statement)
    return runs


class _Recording:
    """A connection that notes every statement it is asked to run."""

    def __init__(self, conn, seen: list[str]):
        self._conn, self._seen = conn, seen

    def execute(self, sql, params=None):
        self._seen.append(sql)
        return self._conn.execute(sql, params)

    def __getattr__(self, name):
        return getattr(self._conn, name)


class RecordingDatabase:
    """The test database, its transactions' statements noted in `seen`."""

    def __init__(self, db):
        self.db, self.seen = db, []

    @contextmanager
    def transaction(self):
        with self.db.transaction() as tx:
            recorded = Transaction(_Recording(tx.conn, self.seen))  # type: ignore[arg-type]
            try:
                yield recorded
            finally:
                tx.committed = recorded.committed


@pytest.fixture
def roomy(db):
    """Demo clients and CEN stock with room for many orders (the floor never waits for credit or stock)."""
    with db.transaction() as tx:
        tx.execute("UPDATE client SET credit_limit_cents = %s", [bench_data.HUGE_CREDIT_CENTS])
        tx.execute("UPDATE stock_level SET on_hand = on_hand + 1000000 WHERE warehouse_id = 'CEN'")
        tx.commit()


def _bench_data(db) -> bench_data.BenchData:
    with db.reading() as conn:
        clients = [r["id"] for r in conn.execute("SELECT id FROM client ORDER BY name").fetchall()]
        skus = [
            r["sku"]
            for r in conn.execute(
                "SELECT p.sku FROM product p JOIN price_list pl ON pl.product_id = p.id"
                " JOIN stock_level s ON s.product_id = p.id AND s.warehouse_id = 'CEN' ORDER BY p.sku"
            ).fetchall()
        ]
        people = [r["id"] for r in conn.execute("SELECT id FROM app_user ORDER BY id").fetchall()]
    return bench_data.BenchData(clients, skus, [], people, "")


def _two_skus(db) -> list[tuple[str, int]]:
    return [(sku, 1) for sku in _bench_data(db).skus[:2]]


def test_the_order_floor_sends_create_orders_statements(db, roomy):
    recording = RecordingDatabase(db)
    assert isinstance(create_order(recording, command(db, _two_skus(db))), Confirmed)
    sent = [normalised(s) for s in recording.seen]

    [floor_tx] = between(script_statements(floor.ORDER_SCRIPT), "BEGIN", "COMMIT")
    assert floor_tx == sent


def test_the_delivery_floor_sends_a_relay_batchs_claim_and_record(db, roomy, settings):
    order = create_order(db, command(db, _two_skus(db)))
    assert isinstance(order, Confirmed)
    recording = RecordingDatabase(db)
    ctx = relay.RelayContext(settings, recording, None, "floor-test")  # type: ignore[arg-type]
    claims, records = [], []
    for destination in ("fiscal", "warehouse"):
        recording.seen.clear()
        with recording.transaction() as tx:
            claimed = outbox_repo.claim_due(
                tx.conn, lease_s=30, worker="floor-test", max_attempts=8, limit=relay.MAX_BATCH, destination=destination
            )
            tx.commit()
        assert len(claimed) == 1
        claims.append(recording.seen[:])
        recording.seen.clear()
        relay.record_all(ctx, claimed, [DeliveryResult(DELIVERED, 200, effect=f"E-{uuid.uuid4().hex[:8]}", duration_ms=5)])
        records.append([normalised(s) for s in recording.seen])

    statements = script_statements(floor.DELIVERY_SCRIPT)
    fiscal_claim, warehouse_claim, record = between(statements, "BEGIN", "COMMIT")
    # The claim is claim_sql's with its last SELECT moved into a CTE whose rows pgbench gathers into arrays.
    claim = outbox_repo.claim_sql(relay.MAX_BATCH, given_ids=False)
    assert claims == [[claim], [claim]]
    ctes, _, last = claim.rpartition("\nSELECT claimed.*")
    for [claim] in (fiscal_claim, warehouse_claim):
        assert claim.startswith(normalised(ctes) + ", batch AS ( " + normalised("SELECT claimed.*" + last) + " )")
    # One lane's record is the other's but for its effect (the fiscal one also looks for the invoice's
    # webhook notices, ADR-022): the floor runs both effects, one per lane.
    assert records[0][:-2] == records[1][:-1]
    assert record == records[0] + records[1][-1:]


def test_both_floors_run_under_pgbench_and_do_what_the_paths_do(db, roomy, settings):
    data = _bench_data(db)
    order = floor.order_floor(db, settings.database_url, data, seconds=1)
    assert order["transactions"] > 0 and order["confirmed"] == order["transactions"]
    with db.reading() as conn:
        row = conn.execute(
            "SELECT count(*) AS orders, count(*) FILTER (WHERE k.order_id IS NULL) AS unlinked,"
            " min((SELECT count(*) FROM stock_reservation r WHERE r.order_id = o.id)) AS reservations,"
            " min((SELECT count(*) FROM outbox_event e WHERE e.aggregate_id = o.id)) AS events"
            " FROM orders o LEFT JOIN idempotency_keys k ON k.order_id = o.id"
        ).fetchone()
    assert row["orders"] == order["transactions"] and row["unlinked"] == 0
    assert row["reservations"] == 2 and row["events"] == 2

    delivery = floor.delivery_floor(db, settings.database_url, data, events=60)
    assert delivery["events"] == delivery["delivered"] == 60 and delivery["events_per_s"] > 0
    with db.reading() as conn:
        open_attempts = conn.execute("SELECT count(*) AS n FROM delivery_attempt WHERE finished_at IS NULL").fetchone()["n"]
    assert open_attempts == 0
