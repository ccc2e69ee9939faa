"""Upgrades keep the data (ADR-016, README "Upgrading"): a database built by an earlier Nexo (schema 0090,
before the order lifecycle, tests/fixtures/make_upgrade_fixture.sh says how it was made) migrates
forward with every row it held, and the books add up on the result."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row

from nexo import migrations
from nexo.backup.postgres import tool
from nexo.books import check_books
from tests.private_postgres import PrivatePostgres

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "nexo-schema-0090.dump"


@pytest.fixture
def older_database():
    server = PrivatePostgres(empty=True)
    try:
        subprocess.run(
            [tool("pg_restore"), "--no-owner", "--no-privileges", "--exit-on-error", "-d", server.url, str(FIXTURE)],
            check=True,
            capture_output=True,
            timeout=120,
        )
        yield server.url
    finally:
        server.stop()


def snapshot(url: str) -> dict:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        return {
            "orders": conn.execute("SELECT id, client_id, status, total_cents FROM orders ORDER BY id").fetchall(),
            "lines": conn.execute("SELECT order_id, sku, quantity, unit_price_cents FROM order_line ORDER BY 1, 2").fetchall(),
            "stock": conn.execute("SELECT product_id, warehouse_id, on_hand, reserved FROM stock_level ORDER BY 1, 2").fetchall(),
            "reservations": conn.execute(
                "SELECT order_id, product_id, quantity, kind FROM stock_reservation ORDER BY 1, 2"
            ).fetchall(),
            "exposure": conn.execute("SELECT id, exposure_cents FROM client ORDER BY id").fetchall(),
            "events": conn.execute("SELECT id, aggregate_id, event_type, status FROM outbox_event ORDER BY id").fetchall(),
            "keys": conn.execute("SELECT request_id, order_id FROM idempotency_keys ORDER BY 1").fetchall(),
            "audit": conn.execute("SELECT count(*) AS n FROM audit_log").fetchone()["n"],
        }


def test_a_database_of_an_earlier_nexo_migrates_forward_with_its_rows(older_database):
    before = snapshot(older_database)
    assert len(before["orders"]) == 4 and len(before["events"]) == 6  # three confirmed orders, two events each
    with psycopg.connect(older_database) as conn:
        applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
    assert max(applied) == "0090_client_list_version"

    migrations.upgrade(older_database)

    after = snapshot(older_database)
    assert after == before  # every row it held, as it was
    with psycopg.connect(older_database, row_factory=dict_row) as conn:
        known = {p.stem for p in migrations.MIGRATIONS_DIR.glob("*.sql")}
        assert {row["version"] for row in conn.execute("SELECT version FROM schema_migrations")} == known
        numbers = conn.execute("SELECT number FROM orders ORDER BY created_at, id").fetchall()
        assert [row["number"] for row in numbers] == [1, 2, 3, 4]  # numbered in the order they were entered
        failed = [finding for finding in check_books(conn) if not finding.ok]
    assert failed == []  # stock and credit add up on the migrated data (flask check)


def test_code_older_than_its_database_refuses_to_migrate_it(older_database):
    migrations.upgrade(older_database)
    with psycopg.connect(older_database, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations (version, checksum) VALUES ('9999_from_the_future', 'x')")
    with pytest.raises(migrations.NewerSchema, match="9999_from_the_future"):
        migrations.upgrade(older_database)
