"""Apply the plain .sql files in migrations/ in order, once each, safe from several hosts at once (ADR-019).

Each file runs in its own transaction, which first takes a transaction-scoped advisory lock on that
file: a second runner waits for it, then finds the file applied and moves on. A transaction-scoped
lock, not a session one, because behind a transaction pooler (PgBouncer) a session's statements go to
different server connections: a session lock taken on one and released on another stays held for good
and the next `db upgrade` waits forever.

A file whose first line is `-- nexo: no-transaction` runs outside any transaction, one statement at a
time (what `CREATE INDEX CONCURRENTLY` needs, so that a new index on a hot table does not block its
writes). Its lock is held meanwhile by a second connection's open transaction. Such a file must be safe
to run again (`IF NOT EXISTS`): an index build interrupted halfway leaves an INVALID index behind, which
the runner drops before running the file again (it holds the file's lock, so no other build is under
way), and which fails the run if the file leaves one. A runner killed mid-statement loses the lock with
its connections, so its statement must stop with it: the server checks every second that the runner is
still there (`client_connection_check_interval`).
"""

from __future__ import annotations

import hashlib
import logging
import re
import sys
import time
from pathlib import Path

import click
import psycopg
import psycopg.sql
from flask import Flask

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
# The advisory lock namespace of the runner (value: "nexo" in ASCII); the second key is the file's.
ADVISORY_LOCK_ID = 0x6E65786F
NO_TRANSACTION = "-- nexo: no-transaction"
LOCK_POLL_S = 0.5
# How soon the server notices that a runner died while a statement of its runs (PostgreSQL 14+, Linux).
# Without it a killed runner's CREATE/DROP INDEX CONCURRENTLY runs on unseen, unrecorded, after the
# file's lock died with the runner's connections, and the next runner waits behind it or races it.
CLIENT_CHECK_INTERVAL = "1s"
_INDEX_NAME = re.compile(r"CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+(\w+)", re.IGNORECASE)


def file_key(version: str) -> int:
    """The advisory lock key of one migration file: a stable 31-bit number from its name."""
    return int.from_bytes(hashlib.sha256(version.encode()).digest()[:4], "big") & 0x7FFFFFFF


def upgrade(database_url: str, directory: Path = MIGRATIONS_DIR, *, connect_kwargs: dict | None = None) -> list[str]:
    """Apply every pending migration; return the versions applied by this call."""
    # Never a prepared statement: DATABASE_MIGRATION_URL may still be a pooler in transaction mode.
    kwargs = {**(connect_kwargs or {}), "prepare_threshold": None}
    done: list[str] = []
    with psycopg.connect(database_url, autocommit=True, **kwargs) as conn:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", [ADVISORY_LOCK_ID])
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version text PRIMARY KEY, checksum text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
        applied = dict(conn.execute("SELECT version, checksum FROM schema_migrations").fetchall())
        files = sorted(directory.glob("*.sql"))
        refuse_newer_schema(set(applied), files[-1].stem if files else "")
        for path in files:
            sql = path.read_text(encoding="utf-8")
            checksum = hashlib.sha256(sql.encode()).hexdigest()
            if path.stem in applied:
                if applied[path.stem] != checksum:
                    log.warning("migration %s changed after it was applied; write a new one instead", path.name)
                continue
            if sql.startswith(NO_TRANSACTION):
                ran = _apply_outside_transaction(database_url, kwargs, conn, path.stem, sql, checksum)
            else:
                ran = _apply_in_transaction(conn, path.stem, sql, checksum)
            if ran:
                log.info("applied migration %s", path.name)
                done.append(path.stem)
    return done


class NewerSchema(RuntimeError):
    """The database was migrated by a newer Nexo than this code: running on it could corrupt it."""


def refuse_newer_schema(applied: set[str], newest_known: str) -> None:
    """Raise NewerSchema, naming both versions, when the database holds a migration newer than any this code has.

    Code older than its database must not start (an upgrade rolled back without its data, a restore of a
    newer backup): it would write rows the newer schema no longer expects.
    """
    newest_applied = max(applied, default="")
    if newest_applied > newest_known:
        raise NewerSchema(
            f"the database is at schema {newest_applied}, newer than this code's {newest_known or '(none)'}: "
            "run the Nexo version that migrated it, or restore a backup made by this one (README, Upgrading)"
        )


def _apply_in_transaction(conn: psycopg.Connection, version: str, sql: str, checksum: str) -> bool:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", [ADVISORY_LOCK_ID, file_key(version)])
        if _is_applied(conn, version):  # another runner applied it while this one waited for the lock
            return False
        # A migration may take longer than the statement timeout the application's sessions get.
        conn.execute("SET LOCAL statement_timeout = 0")
        conn.execute(f"SET LOCAL client_connection_check_interval = '{CLIENT_CHECK_INTERVAL}'")
        conn.execute(sql)
        _record(conn, version, checksum)
    return True


def _apply_outside_transaction(
    database_url: str, kwargs: dict, conn: psycopg.Connection, version: str, sql: str, checksum: str
) -> bool:
    with psycopg.connect(database_url, **kwargs) as holder:
        # The holder's open transaction keeps the file's lock while `conn` runs the statements; if this
        # process dies, its connections close and the lock goes with them.
        if not _wait_for_file_lock(holder, conn, version):
            return False  # another runner applied it meanwhile
        for name in _INDEX_NAME.findall(sql):
            if _invalid_indexes(conn, [name]):
                log.warning("migration %s: dropping index %s left INVALID by an interrupted run", version, name)
                conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
        # Straight to the primary (DATABASE_MIGRATION_URL), this session may build for as long as it
        # takes; through a transaction pooler each statement may reach another server connection, which
        # keeps the database's statement_timeout (ADR-019).
        conn.execute("SET statement_timeout = 0")
        conn.execute(f"SET client_connection_check_interval = '{CLIENT_CHECK_INTERVAL}'")
        try:
            for statement in statements(sql):
                conn.execute(statement)
        finally:
            conn.execute("RESET statement_timeout")
            conn.execute("RESET client_connection_check_interval")
        invalid = _invalid_indexes(conn, _INDEX_NAME.findall(sql))
        if invalid:
            raise RuntimeError(f"migration {version} left INVALID index(es) {', '.join(invalid)}; run db upgrade again")
        _record(holder, version, checksum)
        holder.commit()
    return True


def _wait_for_file_lock(holder: psycopg.Connection, conn: psycopg.Connection, version: str) -> bool:
    """Take the file's lock in holder's transaction; False once another runner has applied the file.

    CREATE INDEX CONCURRENTLY waits for every transaction in the database holding an older snapshot. A
    runner blocked in pg_advisory_xact_lock holds one while it waits, for the lock the building runner
    holds: neither would ever go on (Postgres sees no deadlock: one side of it is in Python). So the
    lock is tried, never waited for, and the try is literal SQL: a statement with bound parameters
    leaves its snapshot in place after it returns, while the holder idles.
    """
    try_lock = psycopg.sql.SQL("SELECT pg_try_advisory_xact_lock({}, {})").format(
        psycopg.sql.Literal(ADVISORY_LOCK_ID), psycopg.sql.Literal(file_key(version))
    )
    while True:
        holder.execute("SET LOCAL idle_in_transaction_session_timeout = 0")
        row = holder.execute(try_lock).fetchone()
        if row and row[0]:
            return not _is_applied(conn, version)
        holder.rollback()
        if _is_applied(conn, version):
            return False
        time.sleep(LOCK_POLL_S)


def statements(sql: str) -> list[str]:
    """The statements of a no-transaction file: each ends with `;` at the end of a line (no function bodies)."""
    found: list[str] = []
    current: list[str] = []
    for line in sql.splitlines():
        if line.strip().startswith("--") and not current:
            continue
        current.append(line)
        if line.rstrip().endswith(";"):
            found.append("\n".join(current).strip())
            current = []
    if "\n".join(current).strip():
        found.append("\n".join(current).strip())
    return found


def _is_applied(conn: psycopg.Connection, version: str) -> bool:
    return conn.execute("SELECT 1 FROM schema_migrations WHERE version = %s", [version]).fetchone() is not None


def _record(conn: psycopg.Connection, version: str, checksum: str) -> None:
    conn.execute("INSERT INTO schema_migrations (version, checksum) VALUES (%s, %s)", [version, checksum])


def _invalid_indexes(conn: psycopg.Connection, names: list[str]) -> list[str]:
    if not names:
        return []
    rows = conn.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE NOT i.indisvalid AND c.relname = ANY(%s) AND pg_catalog.pg_table_is_visible(c.oid)",
        [names],
    ).fetchall()
    return [r[0] for r in rows]


def apply_statement_timeout(database_url: str, seconds: int, *, connect_kwargs: dict | None = None) -> None:
    """Set statement_timeout and idle_in_transaction_session_timeout on the database (0: leave them alone).

    Per database rather than in the URL or per transaction (ADR-019): PgBouncer refuses the `options`
    startup parameter, and a `SET LOCAL` would cost every transaction a round trip; a database setting
    is what every new server connection starts with, the pooler's included.
    """
    if seconds <= 0:
        return
    kwargs = {**(connect_kwargs or {}), "prepare_threshold": None}
    wanted = {f"statement_timeout={int(seconds)}s", f"idle_in_transaction_session_timeout={int(seconds)}s"}
    with psycopg.connect(database_url, autocommit=True, **kwargs) as conn, conn.transaction():
        # Hosts starting together all run db upgrade: one at a time, and only when something changes
        # (two ALTER DATABASE of one database at once fail with "tuple concurrently updated").
        conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", [ADVISORY_LOCK_ID])
        name, current = conn.execute(
            "SELECT current_database(), (SELECT setconfig FROM pg_db_role_setting"
            "  WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) AND setrole = 0)"
        ).fetchone()  # type: ignore[misc]
        if wanted <= set(current or []):
            return
        quoted = '"' + name.replace('"', '""') + '"'
        try:
            for setting in ("statement_timeout", "idle_in_transaction_session_timeout"):
                conn.execute(f"ALTER DATABASE {quoted} SET {setting} = '{int(seconds)}s'")
        except psycopg.errors.InsufficientPrivilege:
            log.warning("could not set statement_timeout on database %s: not its owner; set it per role instead", name)


def init_app(app: Flask) -> None:
    """Register `flask db upgrade`."""

    @app.cli.group("db")
    def db_group() -> None:
        """Database schema commands."""

    @db_group.command("upgrade")
    def db_upgrade() -> None:
        """Apply pending migrations (safe to run twice, or from several hosts at once); set the statement timeout."""
        settings = app.config["NEXO_SETTINGS"]
        url = settings.database.migration_url or settings.database_url
        kwargs = settings.database.connect_kwargs()
        try:
            applied = upgrade(url, connect_kwargs=kwargs)
        except NewerSchema as exc:
            click.echo(f"refused: {exc}", err=True)
            sys.exit(2)
        apply_statement_timeout(url, settings.database.statement_timeout_s, connect_kwargs=kwargs)
        click.echo(f"applied {len(applied)} migration(s)" + (f": {', '.join(applied)}" if applied else ""))
