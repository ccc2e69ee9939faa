"""The WAL archive (ADR-016): how the embedded server fills it, what it holds, what is missing, what to prune.

PostgreSQL's own archiver copies each finished WAL segment with `archive_command`; `archive_timeout`
(BACKUP_MAX_LAG_S) makes it finish a segment that long after a commit at most, so a committed order
is in the archive within that bound even when nothing else is written.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from nexo.backup import postgres
from nexo.settings import BackupSettings

SEGMENT = re.compile(r"^([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})$")
SEGMENTS_PER_ID = 0x100  # 16 MB segments (the default, and the embedded server's): 256 per 4 GB log id


SUFFIX = ".gz"  # every archived file is compressed


def archive_command(wal_dir: Path) -> str:
    """The shell command the server runs per finished file: compress, flush, then rename into place.

    Compressed because archive_timeout closes segments early and Nexo's own processes write all the time:
    a 16 MB segment a minute, mostly zeros, is 23 GB a day uncompressed and a few hundred kB gzipped.
    The rename makes a half-written file invisible to restores; a file already archived with the same
    bytes (the server retrying after a crash between rename and acknowledgement) counts as done,
    different bytes fail loudly rather than overwrite. The server's umask (0077) keeps every file 0600.
    """
    d = shlex.quote(str(wal_dir))
    return (
        f"if test -f {d}/%f{SUFFIX}; then gzip -dc {d}/%f{SUFFIX} | cmp -s - %p; "
        f"else gzip -c %p > {d}/%f{SUFFIX}.part && sync {d}/%f{SUFFIX}.part "
        f"&& mv {d}/%f{SUFFIX}.part {d}/%f{SUFFIX} && sync {d}; fi"
    )


def restore_command(wal_dir: Path) -> str:
    """The shell command recovery runs to fetch one file (segment or timeline history) from the archive.

    The test first: a missing file must fail without the redirection leaving an empty one behind.
    """
    d = shlex.quote(str(wal_dir))
    return f"test -f {d}/%f{SUFFIX} && gzip -dc {d}/%f{SUFFIX} > %p"


def quote_literal(value: str) -> str:
    """A SQL string literal (ALTER SYSTEM takes no bind parameters)."""
    return "'" + value.replace("'", "''") + "'"


def archive_timeout_s(max_lag_s: int) -> int:
    """archive_timeout for a promised BACKUP_MAX_LAG_S: the segment switch comes early enough that the
    archiver's own work (gzip, fsync, rename: 0.3-0.5 s measured, ADR-016) still lands within the bound;
    a tenth of the bound, at least a second, and never below PostgreSQL's 1 s (so 1 s is a best effort)."""
    return max(1, max_lag_s - max(1, max_lag_s // 10))


def archiving_sql(settings: BackupSettings) -> str:
    """The ALTER SYSTEM statements that turn continuous archiving on (take effect at the next restart)."""
    return (
        "ALTER SYSTEM SET wal_level = 'replica'; ALTER SYSTEM SET archive_mode = 'on'; "
        f"ALTER SYSTEM SET archive_command = {quote_literal(archive_command(settings.wal_dir))}; "
        f"ALTER SYSTEM SET archive_timeout = {archive_timeout_s(int(settings.max_lag_s))};"
    )


@dataclass(frozen=True)
class Segment:
    """One archived WAL segment: its timeline and its position in the WAL (log id * 256 + segment)."""

    name: str
    timeline: int
    number: int

    @classmethod
    def parse(cls, name: str) -> Segment | None:
        """The segment a file name (archived, with its suffix, or bare) stands for; None for anything else."""
        match = SEGMENT.match(name.removesuffix(SUFFIX))
        if not match:
            return None
        timeline, log_id, seg = (int(g, 16) for g in match.groups())
        return cls(name.removesuffix(SUFFIX), timeline, log_id * SEGMENTS_PER_ID + seg)

    @property
    def file(self) -> str:
        """Its file name in the archive."""
        return self.name + SUFFIX


def segment_name(timeline: int, number: int) -> str:
    """The file name of the segment at number on timeline."""
    return f"{timeline:08X}{number // SEGMENTS_PER_ID:08X}{number % SEGMENTS_PER_ID:08X}"


def segments(wal_dir: Path) -> list[Segment]:
    """Every archived segment, in WAL order."""
    if not wal_dir.is_dir():
        return []
    found = [s for p in wal_dir.iterdir() if p.name.endswith(SUFFIX) and (s := Segment.parse(p.name))]
    return sorted(found, key=lambda s: (s.number, s.timeline))


def newest_archived_at(wal_dir: Path) -> datetime | None:
    """When the newest segment reached the archive (its file's time): the archive covers commits up to then."""
    found = segments(wal_dir)
    if not found:
        return None
    newest = max((wal_dir / s.file).stat().st_mtime for s in found[-3:])
    return datetime.fromtimestamp(newest, UTC)


@dataclass(frozen=True)
class ServerWal:
    """What the server says of its own WAL: how far the archive must reach, whatever the archive holds.

    Without it the archive can only be checked against itself, and a missing newest segment leaves no trace
    (nothing after it). Every segment before the one the server writes is finished; the archiver has either
    copied it or still holds it as waiting (archive_status/*.ready).
    """

    system_identifier: int
    timeline: int
    current: int  # the position of the segment being written
    waiting: frozenset[int] | None  # finished segments the archiver has not copied yet; None: not readable
    last_archived: str | None  # pg_stat_archiver: the newest file the archiver copied (since its stats began)
    last_failed: str | None
    failing: bool  # the archiver's newest attempt failed (archive_command: a full or missing NEXO_BACKUP_DIR)

    @property
    def end(self) -> int:
        """The last position the archive must hold, or already be waiting for."""
        if self.waiting is not None:
            return self.current - 1
        archived = Segment.parse((self.last_archived or "")[:24])
        return archived.number if archived else -1


_SERVER_WAL = """
SELECT (SELECT system_identifier FROM pg_control_system()) AS system_identifier,
       pg_walfile_name(pg_current_wal_lsn()) AS current,
       {waiting} AS waiting,
       a.last_archived_wal, a.last_failed_wal,
       coalesce(a.last_failed_time > coalesce(a.last_archived_time, '-infinity'), false) AS failing
  FROM pg_stat_archiver a
"""
_WAITING = "(SELECT coalesce(array_agg(name), '{}') FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready')"


def server_wal(conn: psycopg.Connection[Any]) -> ServerWal | None:
    """What the server at conn says of its WAL; None on a server in recovery (it writes none of its own).

    The list of segments waiting for the archiver needs a superuser or pg_monitor (make run's URL is the
    superuser's); without it the check reaches only as far as pg_stat_archiver's last archived file.
    """
    if postgres.scalar(conn, "SELECT pg_is_in_recovery()"):
        return None
    try:
        with conn.transaction():
            row = conn.execute(_SERVER_WAL.format(waiting=_WAITING)).fetchone()
    except psycopg.errors.InsufficientPrivilege:
        row = conn.execute(_SERVER_WAL.format(waiting="NULL::text[]")).fetchone()
    if row is None:
        return None
    values = list(row.values()) if isinstance(row, dict) else list(row)
    system_identifier, current_name, waiting, last_archived, last_failed, failing = values
    current = Segment.parse(current_name)
    if current is None:
        return None
    ready = None if waiting is None else frozenset(s.number for n in waiting if (s := Segment.parse(n.removesuffix(".ready"))))
    return ServerWal(int(system_identifier), current.timeline, current.number, ready, last_archived, last_failed, bool(failing))


def missing_segments(wal_dir: Path, first: str, server: ServerWal | None = None) -> list[str]:
    """Segments absent between first (a base backup's start) and the end, by name.

    The end is where the server says its finished WAL reaches (ServerWal.end) when it was asked, else the
    newest segment archived. A segment the archiver still holds as waiting is the lag, not a gap. Ask the
    server before this lists the archive: a segment archived in between is then in the listing.
    A position counts as present when any timeline has it: after a restore the new timeline continues
    from the point where it forked.
    """
    start = Segment.parse(first)
    if start is None:
        return [first]
    present: dict[int, int] = {}
    for s in segments(wal_dir):
        if s.number >= start.number:
            present[s.number] = max(present.get(s.number, 0), s.timeline)
    last = max(present, default=start.number - 1)
    end = max(last, server.end) if server is not None else last
    if not present and (server is None or end < start.number):
        return [first]
    waiting = server.waiting if server is not None and server.waiting is not None else frozenset()
    timeline = start.timeline
    missing = []
    for number in range(start.number, end + 1):
        if number in present:
            timeline = present[number]
        elif number not in waiting:
            # Past the archive's newest segment, the name is the server's (its timeline).
            missing.append(segment_name(timeline if number <= last or server is None else server.timeline, number))
    return missing


def prune(wal_dir: Path, oldest_needed: str) -> int:
    """Remove the archived segments older than oldest_needed (the oldest kept backup's start); how many."""
    keep_from = Segment.parse(oldest_needed)
    if keep_from is None:
        return 0
    removed = 0
    for s in segments(wal_dir):
        if s.number < keep_from.number:
            (wal_dir / s.file).unlink(missing_ok=True)
            removed += 1
    return removed
