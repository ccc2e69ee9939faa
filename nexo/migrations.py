"""Apply the plain .sql files in migrations/ in order, once each, under a Postgres advisory lock."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import click
import psycopg
from flask import Flask

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
# Any two processes running upgrade() at once serialise on this lock (value: "nexo" in ASCII).
ADVISORY_LOCK_ID = 0x6E65786F


def upgrade(database_url: str, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply every pending migration; return the versions applied by this call."""
    done: list[str] = []
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", [ADVISORY_LOCK_ID])
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version text PRIMARY KEY, checksum text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            rows = conn.execute("SELECT version, checksum FROM schema_migrations").fetchall()
            applied = {version: checksum for version, checksum in rows}
            for path in sorted(directory.glob("*.sql")):
                sql = path.read_text(encoding="utf-8")
                checksum = hashlib.sha256(sql.encode()).hexdigest()
                if path.stem in applied:
                    if applied[path.stem] != checksum:
                        log.warning("migration %s changed after it was applied; write a new one instead", path.name)
                    continue
                with conn.transaction():
                    conn.execute(sql)
                    conn.execute("INSERT INTO schema_migrations (version, checksum) VALUES (%s, %s)", [path.stem, checksum])
                log.info("applied migration %s", path.name)
                done.append(path.stem)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", [ADVISORY_LOCK_ID])
    return done


def init_app(app: Flask) -> None:
    """Register `flask db upgrade`."""

    @app.cli.group("db")
    def db_group() -> None:
        """Database schema commands."""

    @db_group.command("upgrade")
    def db_upgrade() -> None:
        """Apply pending migrations (safe to run twice, or from two processes at once)."""
        applied = upgrade(app.config["NEXO_SETTINGS"].database_url)
        click.echo(f"applied {len(applied)} migration(s)" + (f": {', '.join(applied)}" if applied else ""))
