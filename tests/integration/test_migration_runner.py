"""The migration runner from several hosts at once, and a migration outside a transaction (ADR-019)."""

from __future__ import annotations

import secrets
import threading
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from nexo import migrations

pytestmark = pytest.mark.no_db


@pytest.fixture
def fresh_database(settings):
    """An empty database of its own on the test server; dropped afterwards."""
    name = f"nexo_migr_{secrets.token_hex(4)}"
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(urlsplit(settings.database_url)._replace(path=f"/{name}"))
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _query(url: str, sql: str) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql)
        return cursor.fetchall() if cursor.description else []


def test_runners_on_several_hosts_at_once_apply_each_file_once(fresh_database, tmp_path):
    # A slow file: without its own lock every runner would run it, and all but one fail on the table.
    (tmp_path / "0001_slow.sql").write_text("SELECT pg_sleep(0.5); CREATE TABLE a (x int); INSERT INTO a VALUES (1);")
    (tmp_path / "0002_next.sql").write_text("INSERT INTO a SELECT x + 1 FROM a;")
    results: list = []

    def run() -> None:
        try:
            results.append(migrations.upgrade(fresh_database, tmp_path))
        except Exception as exc:  # recorded: the assertion below names it
            results.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not [r for r in results if isinstance(r, Exception)], results
    assert sorted(v for r in results for v in r) == ["0001_slow", "0002_next"]
    assert _query(fresh_database, "SELECT x FROM a ORDER BY x") == [(1,), (2,)]


def test_a_no_transaction_file_builds_its_index_concurrently_and_can_run_again(fresh_database, tmp_path):
    (tmp_path / "0001_table.sql").write_text("CREATE TABLE t (x int); INSERT INTO t VALUES (1), (1), (2);")
    migrations.upgrade(fresh_database, tmp_path)
    # A concurrent build interrupted halfway (here: duplicates) leaves an INVALID index behind ...
    with pytest.raises(psycopg.errors.UniqueViolation):
        _query(fresh_database, "CREATE UNIQUE INDEX CONCURRENTLY t_x_key ON t (x)")
    assert _query(fresh_database, "SELECT indisvalid FROM pg_index WHERE indexrelid = 't_x_key'::regclass") == [(False,)]
    _query(fresh_database, "DELETE FROM t WHERE ctid = (SELECT min(ctid) FROM t WHERE x = 1)")
    # ... which IF NOT EXISTS alone would keep: the runner drops it and builds it again.
    (tmp_path / "0002_index.sql").write_text(
        "-- nexo: no-transaction\n-- a unique index on a hot table, without blocking its writes\n"
        "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS t_x_key ON t (x);\n"
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS t_x_idx\n    ON t (x);\n"
    )
    assert migrations.upgrade(fresh_database, tmp_path) == ["0002_index"]
    assert _query(
        fresh_database,
        "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE i.indrelid = 't'::regclass ORDER BY 1",
    ) == [("t_x_idx", True), ("t_x_key", True)]
    assert migrations.upgrade(fresh_database, tmp_path) == []


def test_statements_of_a_no_transaction_file_are_split_at_line_ends():
    sql = "-- nexo: no-transaction\n-- why\nCREATE INDEX CONCURRENTLY IF NOT EXISTS a ON t (x);\nCREATE INDEX\n  b ON t (y);\n"
    assert migrations.statements(sql) == ["CREATE INDEX CONCURRENTLY IF NOT EXISTS a ON t (x);", "CREATE INDEX\n  b ON t (y);"]


def test_db_upgrade_sets_the_statement_timeout_every_new_session_starts_with(fresh_database):
    migrations.apply_statement_timeout(fresh_database, 7)
    assert _query(fresh_database, "SHOW statement_timeout") == [("7s",)]
    assert _query(fresh_database, "SHOW idle_in_transaction_session_timeout") == [("7s",)]


def test_a_runner_waiting_for_a_file_does_not_hold_up_the_other_ones_concurrent_index_build(fresh_database, tmp_path):
    # A runner blocked in pg_advisory_xact_lock holds a snapshot, which CREATE INDEX CONCURRENTLY waits
    # for, while the building runner holds the lock it waits for: without the polled try-lock, for good.
    (tmp_path / "0001_table.sql").write_text("CREATE TABLE t (x int); INSERT INTO t SELECT generate_series(1, 1000);")
    migrations.upgrade(fresh_database, tmp_path)
    (tmp_path / "0002_index.sql").write_text(
        "-- nexo: no-transaction\nSELECT pg_sleep(1);\nCREATE INDEX CONCURRENTLY IF NOT EXISTS t_x_idx ON t (x);\n"
    )
    results: list = []

    def run() -> None:
        results.append(migrations.upgrade(fresh_database, tmp_path))

    threads = [threading.Thread(target=run, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "the runners wait for each other"
    assert sorted(v for r in results for v in r) == ["0002_index"]


def test_code_older_than_its_database_refuses_naming_both_versions(fresh_database, tmp_path):
    older, newer = tmp_path / "older", tmp_path / "newer"
    for directory in (older, newer):
        directory.mkdir()
        (directory / "0001_table.sql").write_text("CREATE TABLE t (x int);")
    (newer / "0002_column.sql").write_text("ALTER TABLE t ADD COLUMN y int;")
    migrations.upgrade(fresh_database, newer)
    with pytest.raises(migrations.NewerSchema, match="schema 0002_column, newer than this code's 0001_table"):
        migrations.upgrade(fresh_database, older)
    assert _query(fresh_database, "SELECT version FROM schema_migrations ORDER BY 1") == [("0001_table",), ("0002_column",)]
