"""ADR-002 lock order: every writer locks several stock rows in SKU byte order, whatever the collation.

`AB-2` and `AB1` are in one order byte by byte ('-' is 0x2D, '1' is 0x31) and in the other for a
collation that ignores punctuation (en_US in glibc, ICU with alternate=shifted). The test databases
default to C.UTF-8, which is bytewise, so the fixture makes the `product.sku` column use such a
collation for real; a server that has none (the embedded PostgreSQL 18 is built without ICU and the
machine has no en_US locale) skips the test: the CI run on PostgreSQL 15 has ICU and runs it.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from psycopg import sql

from nexo.credit.service import Decided
from nexo.orders.commands import CONFIRMED
from nexo.orders.service import create_order
from nexo.stock.lock_order import in_lock_order, sku_lock_key
from tests.integration.order_helpers import command, count, stock
from tests.integration.test_credit_decisions import approve, pending_order, reject

SKUS = ("AB-2", "AB1")  # byte order; a punctuation-blind collation says AB1 first
PAUSE_S = 1.5  # how long order entry holds its first stock row (> deadlock_timeout, 1 s)
TEST_COLLATION = "nexo_test_punctuation_blind"


def test_the_lock_order_is_the_byte_order_of_the_sku():
    assert sorted(["AB1", "AB-2", "ÁB0", "AB"], key=sku_lock_key) == ["AB", "AB-2", "AB1", "ÁB0"]
    assert in_lock_order([{"sku": "AB1"}, {"sku": "AB-2"}], sku=lambda r: r["sku"]) == [{"sku": "AB-2"}, {"sku": "AB1"}]


def _punctuation_blind_collation(db) -> tuple[str | None, bool]:
    """A collation that sorts AB1 before AB-2 on this server: (name, created by us) or (None, False)."""
    try:
        with db.transaction() as tx:
            tx.execute(f"CREATE COLLATION IF NOT EXISTS {TEST_COLLATION} (provider = icu, locale = 'en-u-ka-shifted')")
            tx.commit()
        candidates, created = [TEST_COLLATION], True
    except psycopg.errors.FeatureNotSupported:  # "ICU is not supported in this build"
        with db.reading() as conn:
            candidates = [
                r["collname"]
                for r in conn.execute("SELECT collname FROM pg_collation WHERE collprovider = 'c' AND collname ILIKE 'en_US%'")
            ]
        created = False
    for name in candidates:
        with db.reading() as conn:
            first = conn.execute(
                sql.SQL("SELECT min(s COLLATE {}) AS s FROM unnest(%s::text[]) s").format(sql.Identifier(name)), [list(SKUS)]
            ).fetchone()["s"]
        if first == "AB1":
            return name, created
    return None, False


@pytest.fixture
def skus_in_collation_order_unlike_byte_order(db):
    """AB-2 and AB1 in the catalog (price, stock in CEN), with `product.sku` in a punctuation-blind collation."""
    collation, created = _punctuation_blind_collation(db)
    if collation is None:
        pytest.skip("no collation on this server orders AB1 before AB-2 (no ICU, no en_US locale)")
    with db.transaction() as tx:
        for sku in SKUS:
            product = tx.execute("INSERT INTO product (sku, name) VALUES (%s, %s) RETURNING id", [sku, sku]).fetchone()
            tx.execute("INSERT INTO price_list (product_id, price_cents) VALUES (%s, 100000)", [product["id"]])
            tx.execute("INSERT INTO stock_level (product_id, warehouse_id, on_hand) VALUES (%s, 'CEN', 100)", [product["id"]])
        # A column a stored generated column reads cannot change its type: the lookup's search_text
        # (migration 0630) goes for the test and comes back, with its index, afterwards.
        tx.execute("ALTER TABLE product DROP COLUMN search_text")
        tx.execute(sql.SQL("ALTER TABLE product ALTER COLUMN sku TYPE text COLLATE {}").format(sql.Identifier(collation)))
        tx.commit()
    with db.reading() as conn:  # the condition is real: the database disagrees with bytes
        assert [r["sku"] for r in conn.execute("SELECT sku FROM product WHERE sku = ANY(%s) ORDER BY sku", [list(SKUS)])] == [
            "AB1",
            "AB-2",
        ]
    try:
        yield
    finally:
        with db.transaction() as tx:
            tx.execute('ALTER TABLE product ALTER COLUMN sku TYPE text COLLATE "default"')
            tx.execute(
                "ALTER TABLE product ADD COLUMN search_text text GENERATED ALWAYS AS (searchable(sku || ' ' || name)) STORED"
            )
            tx.execute("CREATE INDEX product_search_idx ON product USING gin (search_text gin_trgm_ops)")
            if created:
                tx.execute(f"DROP COLLATION IF EXISTS {TEST_COLLATION}")
            tx.commit()


@pytest.fixture
def entry_pauses_after_its_first_stock_row(db):
    """A trigger that makes order entry sleep right after it reserved AB-2 (its first row), holding that lock."""
    with db.transaction() as tx:
        tx.execute(f"""
            CREATE FUNCTION nexo_test_pause() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF NEW.kind = 'FIRME' AND NEW.product_id = (SELECT id FROM product WHERE sku = 'AB-2') THEN
                PERFORM pg_sleep({PAUSE_S});
              END IF;
              RETURN NEW;
            END $$""")
        tx.execute(
            "CREATE TRIGGER nexo_test_pause AFTER INSERT ON stock_reservation FOR EACH ROW EXECUTE FUNCTION nexo_test_pause()"
        )
        tx.commit()
    try:
        yield
    finally:
        with db.transaction() as tx:
            tx.execute("DROP TRIGGER IF EXISTS nexo_test_pause ON stock_reservation")
            tx.execute("DROP FUNCTION IF EXISTS nexo_test_pause()")
            tx.commit()


def _wait_until_entry_sleeps(db) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with db.reading() as conn:
            if conn.execute("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event = 'PgSleep'").fetchone()["n"]:
                return
        time.sleep(0.01)
    raise AssertionError("order entry never reached its pause")


def test_order_entry_and_a_rejection_on_the_same_two_skus_never_deadlock(
    db, skus_in_collation_order_unlike_byte_order, entry_pauses_after_its_first_stock_row
):
    # A platinum order over its limit holds soft reservations on both SKUs; rejecting it gives them back.
    held = pending_order(db, lines=[("AB1", 6), ("AB-2", 6)])  # 12,000.00 > the 10,000.00 left
    entry = command(db, [("AB1", 1), ("AB-2", 1)], client="Corralón del Sur")
    with ThreadPoolExecutor(max_workers=2) as pool:
        entering = pool.submit(create_order, db, entry)  # locks AB-2, then pauses, then wants AB1
        _wait_until_entry_sleeps(db)
        rejecting = pool.submit(reject, db, held)  # must want AB-2 first too, not AB1
        # Without the one lock order: DeadlockDetected in one of the two, after deadlock_timeout.
        entered, rejected = entering.result(timeout=30), rejecting.result(timeout=30)
    assert entered.outcome == CONFIRMED
    assert isinstance(rejected, Decided) and rejected.status == "RECHAZADO"
    assert stock(db, "AB-2") == {"on_hand": 100, "reserved": 1} and stock(db, "AB1") == {"on_hand": 100, "reserved": 1}


def test_an_approval_never_waits_for_order_entry_on_stock_rows(
    db, skus_in_collation_order_unlike_byte_order, entry_pauses_after_its_first_stock_row
):
    held = pending_order(db, lines=[("AB1", 6), ("AB-2", 6)])  # 12,000.00 > the 10,000.00 left
    entry = command(db, [("AB1", 1), ("AB-2", 1)], client="Corralón del Sur")
    with ThreadPoolExecutor(max_workers=2) as pool:
        entering = pool.submit(create_order, db, entry)
        _wait_until_entry_sleeps(db)
        started = time.monotonic()
        approved = pool.submit(approve, db, held).result(timeout=30)
        took = time.monotonic() - started
        assert entering.result(timeout=30).outcome == CONFIRMED
    # An approval firms up its own reservations and locks no stock row, so it never queues behind entry.
    assert isinstance(approved, Decided) and approved.status == "CONFIRMADO" and took < PAUSE_S
    assert count(db, "SELECT count(*) FROM stock_reservation WHERE kind = 'FIRME'") == 4
