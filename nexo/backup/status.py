"""What /ops and /metrics say about backups (ADR-016): read from NEXO_BACKUP_DIR, and the server's word on its WAL.

The files are the truth a restore would use: the newest base backup, the newest verify and its verdict,
the newest segment in the archive. The server, when asked, says how far its finished WAL reaches: a
segment it finished that is neither in the archive nor waiting for the archiver is a gap, even the newest
one (the archive alone cannot see a gap at its end). Nothing is shown when there is no backup directory
(with DATABASE_URL set, backups are the database operator's).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg

from nexo.backup import archive, base
from nexo.settings import BackupSettings


@dataclass(frozen=True)
class BackupStatus:
    """The freshness of the backups: None where there is nothing yet."""

    newest_backup_at: datetime | None
    backups: int
    last_verify_at: datetime | None  # the newest verify of any backup, whatever its verdict
    last_verify_ok: bool | None
    last_verified_at: datetime | None  # the newest verify that held
    wal_archived_at: datetime | None
    wal_missing: list[str] | None  # segments absent from the oldest backup's start to the end; None: no backup
    wal_end_checked: bool  # the end is the server's word (else only the archive's own newest segment)
    archiver_failing: bool | None  # the archiver's newest attempt failed; None: the server was not asked


def server_of(conn: psycopg.Connection[Any] | None, backup: base.Backup) -> archive.ServerWal | None:
    """What the server at conn says of its WAL, when it is the cluster backup copies; else None.

    With DATABASE_URL pointing elsewhere than the archived cluster, its WAL positions mean nothing here.
    """
    if conn is None:
        return None
    try:
        server = archive.server_wal(conn)
    except psycopg.Error:
        return None
    if server is None or server.system_identifier != backup.system_identifier():
        return None
    return server


def read_status(settings: BackupSettings, conn: psycopg.Connection[Any] | None = None) -> BackupStatus | None:
    """The status, or None when this host keeps no backups; conn: the database, to ask how far its WAL reaches."""
    if not settings.backup_dir.is_dir():
        return None
    backups = base.all_backups(settings)
    verifies = sorted(
        ((datetime.fromisoformat(b.verified["at"]).astimezone(UTC), bool(b.verified["ok"])) for b in backups if b.verified),
    )
    held = [at for at, ok in verifies if ok]
    server = server_of(conn, backups[-1]) if backups else None  # asked before the archive is listed
    missing = archive.missing_segments(settings.wal_dir, backups[0].start_wal, server) if backups else None
    return BackupStatus(
        newest_backup_at=backups[-1].finished_at if backups else None,
        backups=len(backups),
        last_verify_at=verifies[-1][0] if verifies else None,
        last_verify_ok=verifies[-1][1] if verifies else None,
        last_verified_at=held[-1] if held else None,
        wal_archived_at=archive.newest_archived_at(settings.wal_dir),
        wal_missing=missing,
        wal_end_checked=server is not None,
        archiver_failing=server.failing if server is not None else None,
    )
