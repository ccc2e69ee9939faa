"""Logical dumps (ADR-016): pg_dump's custom format for any Postgres Nexo runs on, and its restore.

With DATABASE_URL set, continuous archiving is the database operator's (pgBackRest, a managed service's
point-in-time recovery); a dump is what Nexo itself gives: a copy of one moment, portable across versions.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from nexo.backup import postgres
from nexo.settings import BackupSettings


class Refused(Exception):
    """The restore did not start; the message says why."""


def default_path(settings: BackupSettings) -> Path:
    """Where a dump goes when no --output is given: NEXO_BACKUP_DIR/dumps/nexo-<time>.dump."""
    directory = settings.backup_dir / "dumps"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return directory / f"nexo-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.dump"


def dump(url: str, output: Path) -> Path:
    """pg_dump -Fc of the database at url into output (0600, written whole then renamed)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    part = output.with_name(output.name + ".part")
    os.close(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))  # born private, pg_dump fills it
    try:
        with postgres.client_conninfo(url) as conninfo:
            postgres.run([postgres.tool("pg_dump"), "-Fc", "-f", str(part), "-d", conninfo], timeout=3600)
        os.replace(part, output)
    finally:
        part.unlink(missing_ok=True)
    return output


def restore_dump(path: Path, url: str) -> None:
    """pg_restore of a dump into the database at url, refused when it already holds Nexo's tables."""
    if not path.is_file():
        raise Refused(f"{path} is not a file")
    with psycopg.connect(url, autocommit=True) as conn:
        held = "SELECT to_regclass('public.orders') IS NOT NULL OR to_regclass('public.schema_migrations') IS NOT NULL"
        if postgres.scalar(conn, held):
            raise Refused("that database already holds Nexo's tables: restore into an empty database")
    with postgres.client_conninfo(url) as conninfo:
        postgres.run(
            [postgres.tool("pg_restore"), "--exit-on-error", "--no-owner", "--no-privileges", "-d", conninfo, str(path)],
            timeout=3600,
        )
