"""Verify a backup by restoring it (ADR-016): pg_verifybackup's word alone is no proof, a restore is.

The backup is checked against its manifest, the archive is checked for gaps from the backup's first
segment on, a copy is restored into a scratch cluster (private socket, archiving off) that replays the
whole archive, pg_amcheck reads every table and index, and Nexo's own invariants are asked of the result.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

from nexo import books
from nexo.backup import archive, base, postgres, restore, status
from nexo.migrations import MIGRATIONS_DIR
from nexo.settings import BackupSettings
from nexo.states import OrderStatus

SCRATCH_ROOT = Path("/tmp")  # short: the scratch server's socket path must stay under 107 bytes
SCRATCH_PREFIX = "nexo-verify-"


@dataclass
class Report:
    """What each step found; holds when every step held."""

    lines: list[tuple[bool, str, str]] = field(default_factory=list)

    def add(self, ok: bool, step: str, detail: str) -> bool:
        self.lines.append((ok, step, detail))
        return ok

    @property
    def ok(self) -> bool:
        return bool(self.lines) and all(ok for ok, _, _ in self.lines)


# Each invariant is a count of the rows that break it, with its parameters (a state is bound, as everywhere).
INVARIANTS: list[tuple[str, str, list[object]]] = [
    ("reserved <= on_hand", "SELECT count(*) FROM stock_level WHERE reserved > on_hand", []),
    (
        # With OUTBOX_RETENTION_DAYS set, delivered events older than the retention are purged (ADR-010) and
        # each purge leaves an audit row with its cutoff: an order entered before the newest cutoff may have
        # lost its delivered events for good reason, one entered after it must have both.
        "every CONFIRMADO order has its two events (unless the outbox retention purged them)",
        """SELECT count(*) FROM orders o WHERE o.status = %s
              AND o.created_at > coalesce(
                    (SELECT max(a.occurred_at - make_interval(days => (a.details->>'older_than_days')::int))
                       FROM audit_log a WHERE a.action = 'outbox_event.purged'), '-infinity')
              AND (SELECT count(DISTINCT e.event_type) FROM outbox_event e
                    WHERE e.aggregate_id = o.id
                      AND e.event_type IN ('order.handoff_requested', 'billing.intent_recorded')) < 2""",
        [OrderStatus.CONFIRMADO],
    ),
    (
        "every dead letter has its event",
        "SELECT count(*) FROM dead_letter d LEFT JOIN outbox_event e ON e.id = d.event_id WHERE e.id IS NULL",
        [],
    ),
    (
        "the audit log's append-only trigger is in place",
        """SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_trigger
             WHERE tgname = 'audit_log_append_only' AND tgrelid = 'audit_log'::regclass AND tgenabled <> 'D')
           THEN 0 ELSE 1 END""",
        [],
    ),
]


def verify(settings: BackupSettings, backup: base.Backup, url: str | None = None) -> Report:
    """Run every step on backup; the report holds when all held.

    url: the backed-up cluster's server, asked how far its finished WAL reaches (a missing newest segment
    is a gap only it can reveal); without it the archive is checked against its own newest segment.
    """
    report = Report()
    try:
        postgres.run([postgres.tool("pg_verifybackup"), "-q", str(backup.data)], timeout=3600)
        report.add(True, "pg_verifybackup", "files and WAL match the manifest")
    except postgres.ToolError as exc:
        report.add(False, "pg_verifybackup", str(exc))
        return report
    server = _ask(url, backup)
    missing = archive.missing_segments(settings.wal_dir, backup.start_wal, server)
    end = (
        f"the end of the WAL the server finished ({archive.segment_name(server.timeline, server.end)})"
        if server is not None
        else "the newest archived (no word from this cluster's server on how far its WAL reaches)"
    )
    if missing:
        shown = ", ".join(missing[:5]) + (f" (and {len(missing) - 5} more)" if len(missing) > 5 else "")
        report.add(False, "archive", f"missing WAL segment(s) in {settings.wal_dir}: {shown}; from the backup's start to {end}")
        return report
    report.add(True, "archive", f"no segment missing from the backup's start to {end}")
    sweep_abandoned_scratch()
    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=str(SCRATCH_ROOT)))
    try:
        (scratch / "owner").write_text(str(os.getpid()))
        scratch.chmod(0o700)
        postgres.give_to_server(scratch)
        _restore_and_check(settings, backup, scratch / "data", report)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return report


def _ask(url: str | None, backup: base.Backup) -> archive.ServerWal | None:
    if not url:
        return None
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            return status.server_of(conn, backup)
    except psycopg.Error:
        return None


def sweep_abandoned_scratch() -> list[Path]:
    """Scratch clusters of a verify that was killed (its process gone): their server stopped, files removed.

    pg_ctl detaches the server from its caller's process group, so stopping make run mid-verify (or the
    maintenance program being killed) leaves it running; the next verify cleans up after the last.
    """
    swept = []
    for directory in SCRATCH_ROOT.glob(SCRATCH_PREFIX + "*"):
        try:
            owner = int((directory / "owner").read_text())
        except (OSError, ValueError):
            continue  # being created, or not ours
        if postgres.pid_alive(owner):
            continue
        if postgres.postmaster_running(directory / "data"):
            with contextlib.suppress(postgres.ToolError, subprocess.TimeoutExpired):
                postgres.run(
                    [postgres.tool("pg_ctl"), "-D", str(directory / "data"), "-m", "immediate", "-w", "stop"],
                    as_server=True,
                    timeout=60,
                )
        shutil.rmtree(directory, ignore_errors=True)
        swept.append(directory)
    return swept


def _restore_and_check(settings: BackupSettings, backup: base.Backup, pgdata: Path, report: Report) -> None:
    # The scratch copy is prepared exactly as a real restore prepares one.
    restore.prepare(backup, pgdata, settings.wal_dir, at=None)
    try:
        with postgres.private_server(pgdata, archive=False) as server:
            promoted = postgres.wait_until(lambda: _promoted(server.url), timeout_s=1800)
            if not report.add(
                bool(promoted), "replay", "the archive replayed to its end" if promoted else "recovery never ended"
            ):
                return
            try:
                postgres.run(
                    [postgres.tool("pg_amcheck"), *server.conninfo_args(), "--all", "--install-missing", "--heapallindexed"],
                    timeout=3600,
                )
                report.add(True, "pg_amcheck", "every table and index reads back consistent")
            except postgres.ToolError as exc:
                report.add(False, "pg_amcheck", str(exc))
            try:
                _check_nexo(server.url, report)
            except psycopg.Error as exc:
                report.add(False, "Nexo's schema", f"could not be read: {exc}")
    except postgres.ToolError as exc:
        report.add(False, "replay", str(exc))


def _promoted(url: str) -> bool:
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            return not postgres.scalar(conn, "SELECT pg_is_in_recovery()")
    except psycopg.OperationalError:
        return False


def _check_nexo(url: str, report: Report) -> None:
    """Nexo's invariants on the restored database, the books' checks included (guarantee 19)."""
    with psycopg.connect(url, row_factory=dict_row, autocommit=True) as conn:
        applied = {r["version"] for r in conn.execute("SELECT version FROM schema_migrations")}
        newest = max(applied, default="")
        expected = {p.stem for p in MIGRATIONS_DIR.glob("*.sql") if p.stem <= newest}
        missing = sorted(expected - applied)
        report.add(
            not missing and bool(applied), "migrations", f"missing {missing}" if missing else f"all applied up to {newest}"
        )
        for name, sql, params in INVARIANTS:
            bad = postgres.scalar(conn, sql, params)
            report.add(bad == 0, name, "holds" if bad == 0 else f"{bad} row(s) break it")
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        for finding in books.check_books(conn):
            report.add(finding.ok, finding.name, finding.detail)
        conn.rollback()
