"""The daily backup round (ADR-016), run by the maintenance runner while the embedded Postgres is in use.

A base backup when none is younger than a day; backups older than BACKUP_KEEP_DAYS removed (never the
newest), with the archived WAL no kept backup needs; the newest backup verified once a day (a restore
rehearsed, its verdict kept next to it for /ops and /metrics).
"""

from __future__ import annotations

import logging
import shutil
from datetime import UTC, datetime, timedelta

from nexo.backup import archive, base, postgres, verify
from nexo.settings import BackupSettings

log = logging.getLogger(__name__)

DAY = timedelta(days=1)


def embedded_in_use(settings: BackupSettings) -> bool:
    """Whether this host runs the embedded Postgres (make run's default): only then are backups Nexo's job."""
    return postgres.postmaster_running(settings.pgdata)


def run_round(settings: BackupSettings, url: str, now: datetime | None = None) -> dict[str, object]:
    """One round: back up, prune, verify, as each is due; return what was done."""
    now = now or datetime.now(UTC)
    done: dict[str, object] = {}
    swept = base.sweep_partial(settings)  # a backup killed mid-way: its disk back within the hour
    if swept:
        log.warning("backup: removed partial base backup(s) whose writer was gone: %s", swept)
        done["swept"] = swept
    backups = base.all_backups(settings)
    if not backups or backups[-1].finished_at < now - DAY:
        taken = base.take(settings, url)
        log.info("backup: base backup %s taken (%d bytes)", taken.name, taken.size_bytes)
        done["taken"] = taken.name
        backups = base.all_backups(settings)
    done["pruned"] = prune(settings, backups, now)
    newest = base.all_backups(settings)[-1]
    last = datetime.fromisoformat(newest.verified["at"]) if newest.verified else None
    if last is None or last < now - DAY:
        report = verify.verify(settings, newest, url)
        failed = [step for ok, step, _ in report.lines if not ok]
        verdict = "restores and holds" if report.ok else f"FAILED: {', '.join(failed)}"
        base.record_verdict(newest, report.ok, f"verdict: {newest.name} {verdict}")
        (log.info if report.ok else log.error)("backup: verify of %s: %s", newest.name, verdict)
        done["verified"] = report.ok
    return done


def prune(settings: BackupSettings, backups: list[base.Backup], now: datetime) -> list[str]:
    """Remove the backups older than BACKUP_KEEP_DAYS but the newest, then the WAL older than the oldest kept."""
    cutoff = now - timedelta(days=settings.keep_days)
    old = [b for b in backups[:-1] if b.finished_at < cutoff]
    for b in old:
        shutil.rmtree(b.path)
        log.info("backup: removed %s (older than %d days)", b.name, settings.keep_days)
    kept = [b for b in backups if b not in old]
    if kept and kept[0].start_wal:
        removed = archive.prune(settings.wal_dir, kept[0].start_wal)
        if removed:
            log.info("backup: removed %d archived WAL segment(s) older than %s", removed, kept[0].start_wal)
    return [b.name for b in old]
