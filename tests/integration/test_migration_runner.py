"""The migration runner from several hosts at once, and a migration outside a transaction (ADR-019)."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
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


@contextmanager
def _runner_killed_while_waiting(url: str, directory: Path, statement: str) -> Iterator[None]:
    """Run `migrations.upgrade(url, directory)` in a process of its own until `statement` (how its text starts)
    waits for a lock; the block runs then; then kill -9 the process and wait until its statement is gone
    from the server too (within 15 s)."""
    code = f"from pathlib import Path; from nexo import migrations; migrations.upgrade({url!r}, Path({str(directory)!r}))"
    runner = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2])
    running = f"SELECT pid FROM pg_stat_activity WHERE query LIKE '{statement}%' AND datname = current_database()"
    try:
        _wait_for(lambda: _query(url, running + " AND wait_event_type = 'Lock'"), runner, f"the runner never reached {statement}")
        yield
    finally:
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
    _wait_for(lambda: not _query(url, running), None, f"the killed runner's {statement} runs on")


def _wait_for(condition: Callable[[], object], process: subprocess.Popen | None, failure: str, timeout_s: float = 15) -> None:
    """Poll condition until it holds; fail with `failure` after timeout_s or once process has exited."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert (process is None or process.poll() is None) and time.monotonic() < deadline, failure
        time.sleep(0.1)


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


def test_a_runner_killed_while_dropping_an_index_concurrently_stops_there_and_the_next_run_finishes(fresh_database, tmp_path):
    # Migration 0710 on the real schema, its runner a real process killed with -9 while its DROP INDEX
    # CONCURRENTLY waits for a reader of `orders` (any open transaction that touched the table).
    drop = "0710_drop_redundant_salesperson_index"
    for path in sorted(migrations.MIGRATIONS_DIR.glob("*.sql")):
        if path.stem < drop:
            shutil.copy(path, tmp_path)
    migrations.upgrade(fresh_database, tmp_path)
    shutil.copy(migrations.MIGRATIONS_DIR / f"{drop}.sql", tmp_path)
    index_state = "SELECT indisvalid FROM pg_index WHERE indexrelid = 'orders_salesperson_idx'::regclass"

    with psycopg.connect(fresh_database) as reader:
        reader.execute("SELECT count(*) FROM orders")
        # The server notices the runner is gone and stops its statement, while the reader still holds it
        # up: otherwise the DROP would finish later, unrecorded, behind whatever ran next.
        with _runner_killed_while_waiting(fresh_database, tmp_path, "DROP INDEX CONCURRENTLY"):
            # Halfway: the index is already out of every plan, and still in the catalog.
            assert _query(fresh_database, index_state) == [(False,)]
        reader.rollback()

    assert _query(fresh_database, index_state) == [(False,)]  # left INVALID, as a crash leaves it
    assert _query(fresh_database, f"SELECT 1 FROM schema_migrations WHERE version = '{drop}'") == []
    assert migrations.upgrade(fresh_database, tmp_path) == [drop]
    assert _query(fresh_database, "SELECT to_regclass('orders_salesperson_idx')") == [(None,)]
    assert migrations.upgrade(fresh_database, tmp_path) == []


def test_a_runner_killed_while_building_an_index_concurrently_stops_there_and_the_next_run_builds_it(fresh_database, tmp_path):
    # The build waits for every open writer of the table; the runner, a real process, is killed there.
    (tmp_path / "0001_table.sql").write_text("CREATE TABLE t (x int); INSERT INTO t SELECT generate_series(1, 1000);")
    migrations.upgrade(fresh_database, tmp_path)
    (tmp_path / "0002_index.sql").write_text(
        "-- nexo: no-transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS t_x_idx ON t (x);\n"
    )

    with psycopg.connect(fresh_database) as writer:
        writer.execute("INSERT INTO t VALUES (0)")
        with _runner_killed_while_waiting(fresh_database, tmp_path, "CREATE INDEX CONCURRENTLY"):
            pass
        writer.commit()

    assert _query(fresh_database, "SELECT indisvalid FROM pg_index WHERE indexrelid = 't_x_idx'::regclass") == [(False,)]
    assert migrations.upgrade(fresh_database, tmp_path) == ["0002_index"]
    assert _query(fresh_database, "SELECT indisvalid FROM pg_index WHERE indexrelid = 't_x_idx'::regclass") == [(True,)]
