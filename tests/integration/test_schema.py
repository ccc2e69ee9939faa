"""Migrations and the guarantees the database itself enforces (ADR-002 CHECK, append-only audit log)."""

import re
import secrets
import threading
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from nexo import audit, migrations, states


@pytest.fixture
def empty_database(settings):
    """A brand-new empty database on the same server, dropped afterwards."""
    name = f"nexo_mig_{secrets.token_hex(4)}"
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = urlunsplit(urlsplit(settings.database_url)._replace(path=f"/{name}"))
    yield url
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _applied(url):
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]


def test_migrations_apply_once_and_a_second_run_does_nothing(empty_database):
    first = migrations.upgrade(empty_database)
    assert first == [p.stem for p in sorted(migrations.MIGRATIONS_DIR.glob("*.sql"))]
    assert migrations.upgrade(empty_database) == []
    assert _applied(empty_database) == first


def test_two_processes_migrating_at_once_apply_each_migration_once(empty_database):
    results, errors = [], []

    def run():
        try:
            results.append(migrations.upgrade(empty_database))
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    applied_by_someone = sorted(v for r in results for v in r)
    assert applied_by_someone == _applied(empty_database)


def _product_id(conn, sku):
    return conn.execute("SELECT id FROM product WHERE sku = %s", [sku]).fetchone()["id"]


def test_check_refuses_reserving_more_than_on_hand_from_plain_sql(db):
    """Scene 1: the Friday stock-count script writes stock_level directly, without the condition."""
    with db.transaction() as tx:
        product_id = _product_id(tx.conn, "CAB-045")
        with pytest.raises(psycopg.errors.CheckViolation, match="disponible_no_negativo"):
            tx.execute(
                "UPDATE stock_level SET reserved = reserved + 41 WHERE product_id = %s AND warehouse_id = 'CEN'", [product_id]
            )


def test_check_refuses_lowering_on_hand_below_reserved(db):
    with db.transaction() as tx:
        product_id = _product_id(tx.conn, "CAB-045")
        tx.execute("UPDATE stock_level SET reserved = 30 WHERE product_id = %s AND warehouse_id = 'CEN'", [product_id])
        with pytest.raises(psycopg.errors.CheckViolation, match="disponible_no_negativo"):
            tx.execute("UPDATE stock_level SET on_hand = 29 WHERE product_id = %s AND warehouse_id = 'CEN'", [product_id])


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_log SET actor = 'someone-else'",
        "DELETE FROM audit_log",
        "TRUNCATE audit_log",
    ],
)
def test_audit_log_refuses_update_delete_and_truncate(db, statement):
    with db.transaction() as tx:
        audit.append(tx.conn, actor="laura", action="credit.approved", object_type="order", object_id="x")
        tx.commit()
    with db.transaction() as tx, pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
        tx.execute(statement)
    with db.reading() as conn:
        assert conn.execute("SELECT actor FROM audit_log").fetchone()["actor"] == "laura"


def test_transaction_rolls_back_unless_committed(db):
    with db.transaction() as tx:
        tx.execute("INSERT INTO warehouse (id, name) VALUES ('TMP', 'temporal')")
    with db.transaction() as tx:
        tx.execute("INSERT INTO warehouse (id, name) VALUES ('KEP', 'guardado')")
        tx.commit()
    with db.reading() as conn:
        ids = {r["id"] for r in conn.execute("SELECT id FROM warehouse")}
    assert "TMP" not in ids and "KEP" in ids


def test_transaction_rolls_back_when_the_block_raises(db):
    with pytest.raises(RuntimeError), db.transaction() as tx:
        tx.execute("INSERT INTO warehouse (id, name) VALUES ('ERR', 'error')")
        raise RuntimeError("boom")
    with db.reading() as conn:
        assert conn.execute("SELECT count(*) AS n FROM warehouse WHERE id = 'ERR'").fetchone()["n"] == 0


def test_demo_data_is_the_nexo_morning(db):
    with db.reading() as conn:
        stock = {
            r["sku"]: r["on_hand"]
            for r in conn.execute(
                "SELECT p.sku, s.on_hand FROM stock_level s JOIN product p ON p.id = s.product_id WHERE s.warehouse_id = 'CEN'"
            )
        }
        prices = {
            r["sku"]: r["price_cents"]
            for r in conn.execute("SELECT p.sku, pl.price_cents FROM product p LEFT JOIN price_list pl ON pl.product_id = p.id")
        }
        clients = {
            r["name"]: (r["tier"], r["credit_limit_cents"], r["exposure_cents"]) for r in conn.execute("SELECT * FROM client")
        }
        users = {r["username"] for r in conn.execute("SELECT username FROM app_user")}
    assert stock == {"COR-118": 1, "COR-200": 500, "TOR-010": 10_000, "CAB-045": 40, "PRC-000": 100}
    assert prices == {"COR-118": 1_250_000, "COR-200": 320_000, "TOR-010": 15_000, "CAB-045": 890_000, "PRC-000": None}
    assert clients["Ferretería Platino SA"] == ("PLATINO", 100_000_000, 99_000_000)
    assert clients["Obras Rápidas SRL"] == ("REGULAR", 5_000_000, 0)
    assert users == {"vendedor1", "vendedor2", "laura", "sergio", "marta"}


STATE_COLUMNS = [
    (states.OrderStatus, "orders", "status"),
    (states.BillingStatus, "orders", "billing_status"),
    (states.ReservationKind, "stock_reservation", "kind"),
    (states.EventStatus, "outbox_event", "status"),
    (states.AttemptOutcome, "delivery_attempt", "outcome"),
    (states.DeadLetterStatus, "dead_letter", "status"),
    (states.EmailStatus, "email_message", "status"),
]


@pytest.mark.parametrize(("enum", "table", "column"), STATE_COLUMNS, ids=[f"{t}.{c}" for _, t, c in STATE_COLUMNS])
def test_each_state_enum_spells_exactly_what_the_database_check_allows(db, enum, table, column):
    # nexo/states.py and the CHECK constraints of the migrations are two spellings of one list: a state
    # added to one and not the other would be refused by the database, or never written.
    with db.reading() as conn:
        definitions = [
            r["definition"]
            for r in conn.execute(
                "SELECT pg_get_constraintdef(c.oid) AS definition FROM pg_constraint c"
                " JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)"
                " WHERE c.conrelid = %s::regclass AND c.contype = 'c' AND a.attname = %s"
                "   AND array_length(c.conkey, 1) = 1",
                [table, column],
            ).fetchall()
        ]
    allowed = [set(re.findall(r"'([^']*)'::text", d)) for d in definitions if "ANY" in d or " IN " in d]
    assert allowed, f"no CHECK lists the values of {table}.{column}"
    assert {m.value for m in enum} in allowed
