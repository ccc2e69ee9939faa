"""Restore to a time (ADR-016): a base backup, the archive replayed up to AT, left for the next `make run`.

Recovery runs here, to completion, on a private socket: the person restoring learns at once whether it
worked, and `make run` then starts an ordinary cluster (no recovery settings left behind). The current
data directory is moved aside, never deleted.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from nexo.backup import archive, base, postgres
from nexo.settings import BackupSettings

RECOVERY_KEYS = ("restore_command", "recovery_target_time", "recovery_target_action", "recovery_target_timeline")
NOT_REACHED = "recovery ended before configured recovery target was reached"


class Refused(Exception):
    """The restore did not start; nothing was touched. The message says why."""


@dataclass(frozen=True)
class Window:
    """The times a restore can reach: from the oldest backup's end to the newest archived WAL."""

    start: datetime
    end: datetime

    def __str__(self) -> str:
        return f"{self.start.isoformat(timespec='seconds')} .. {self.end.isoformat(timespec='seconds')}"


def window(settings: BackupSettings, backups: list[base.Backup] | None = None) -> Window | None:
    """The restore window, or None when there is no backup."""
    backups = base.all_backups(settings) if backups is None else backups
    if not backups:
        return None
    newest_wal = archive.newest_archived_at(settings.wal_dir)
    end = max(b.finished_at for b in backups)
    if newest_wal and newest_wal > end:
        end = newest_wal
    return Window(backups[0].finished_at, end)


def choose(settings: BackupSettings, at: datetime | None, name: str | None) -> base.Backup:
    """The backup a restore starts from (FROM, or the newest one finished before AT); Refused otherwise."""
    backups = base.all_backups(settings)
    span = window(settings, backups)
    if span is None:
        raise Refused(f"there is no backup in {settings.base_dir}: run `make backup` first")
    if at is not None and not span.start <= at <= span.end:
        raise Refused(f"AT={at.isoformat()} is outside the window this archive can restore to: {span}")
    if name:
        chosen = base.find(settings, name)
        if chosen is None:
            raise Refused(f"no backup called {name} in {settings.base_dir} (flask --app app backup list)")
        if at is not None and chosen.finished_at > at:
            raise Refused(f"{name} finished at {chosen.finished_at.isoformat()}, after AT={at.isoformat()}")
    else:
        eligible = [b for b in backups if at is None or b.finished_at <= at]
        chosen = eligible[-1]
    code = base.code_schema_version()
    if chosen.schema_version > code:
        raise Refused(
            f"{chosen.name} holds schema {chosen.schema_version}, newer than this code's {code}: "
            "restore it with the Nexo version that made it"
        )
    return chosen


def restore(settings: BackupSettings, at: datetime | None, name: str | None, say) -> Path:
    """Restore into settings.pgdata; return where the previous data directory was moved."""
    if postgres.postmaster_running(settings.pgdata):
        raise Refused(f"Postgres is running on {settings.pgdata} (make run?): stop it first, nothing was touched")
    chosen = choose(settings, at, name)
    aside = settings.pgdata.with_name(f"postgres.before-restore-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}")
    if settings.pgdata.exists():
        settings.pgdata.rename(aside)
        say(f"the previous data directory is kept in {aside}")
    target = "the end of the archive" if at is None else at.isoformat()
    say(f"restoring {chosen.name} (finished {chosen.finished_at.isoformat()}) and replaying the archive up to {target}")
    prepare(chosen, settings.pgdata, settings.wal_dir, at)
    replay(settings.pgdata, at is not None, say)
    return aside


def prepare(backup: base.Backup, pgdata: Path, wal_dir: Path, at: datetime | None) -> None:
    """Copy the backup to pgdata and tell it to recover from the archive (up to at, then promote)."""
    shutil.copytree(backup.data, pgdata, symlinks=True)
    pgdata.chmod(0o700)
    # The backed-up server's own files, not this cluster's. Its socket lock (make run's embedded server
    # keeps its socket in the data directory) names that server's PID: once the PID is reused by a
    # process of the server's user (after a reboot PIDs start low again), Postgres refuses to start on
    # "lock file already exists". Its log would read as this cluster's history.
    for stale in ("postmaster.pid", ".handle_pids.json", "log", *(p.name for p in pgdata.glob(".s.PGSQL.*.lock"))):
        (pgdata / stale).unlink(missing_ok=True)
    settings = [
        f"restore_command = {archive.quote_literal(archive.restore_command(wal_dir))}",
        "recovery_target_timeline = 'latest'",
    ]
    if at is not None:
        settings += [f"recovery_target_time = '{at.isoformat()}'", "recovery_target_action = 'promote'"]
    with open(pgdata / "postgresql.auto.conf", "a") as conf:
        conf.write("\n# Written by backup restore (ADR-016); removed once recovery is done.\n")
        conf.write("\n".join(settings) + "\n")
    (pgdata / "recovery.signal").touch()
    postgres.give_to_server(pgdata)


def replay(pgdata: Path, targeted: bool, say) -> None:
    """Run recovery to its end, then remove the recovery settings so `make run` starts an ordinary cluster.

    A target time later than the last commit in the archive ends recovery "before the target": everything
    archived is then older than AT, which is what AT asked for, so the replay goes on without the target.
    """
    try:
        _recover(pgdata)
    except postgres.ToolError as exc:
        if not (targeted and NOT_REACHED in str(exc)):
            raise
        say("the archive ends before AT: replaying all of it")
        _drop_target(pgdata)
        (pgdata / "recovery.signal").touch()
        postgres.give_to_server(pgdata)
        _recover(pgdata)


def _recover(pgdata: Path) -> None:
    with postgres.private_server(pgdata, archive=True) as server, psycopg.connect(server.url, autocommit=True) as conn:
        promoted = postgres.wait_until(lambda: not postgres.scalar(conn, "SELECT pg_is_in_recovery()"), 1800)
        if not promoted:
            raise postgres.ToolError(f"recovery did not finish within 30 minutes; the server said: {server.log_text()[-2000:]}")
        for key in RECOVERY_KEYS:
            conn.execute(f"ALTER SYSTEM RESET {key}")
        conn.execute("CHECKPOINT")


def _drop_target(pgdata: Path) -> None:
    conf = pgdata / "postgresql.auto.conf"
    kept = [line for line in conf.read_text().splitlines() if not line.startswith("recovery_target_time")]
    conf.write_text("\n".join(kept) + "\n")
