"""History out of the hot path (ADR-019): settled events leave the live partition for their month.

outbox_event and delivery_attempt are partitioned by the day an event settled (migration 0700). The work
still to do lives in the live partition (settled_on 9999-12-31), which every statement of the relay names
(partitions.LIVE_EVENTS). The maintenance runner files what has settled into one partition per month
(`file_settled_events`), and, once OUTBOX_RETENTION_DAYS is decided (docs/unknowns.md), drops a month
past it whole (`drop_expired_months`) instead of deleting its rows one by one.

Filing an event is an UPDATE of its partition key: Postgres moves the row to its month; its attempts are
moved first, in the same transaction (their key to the event is checked at the commit), and its dead
letters follow it (ON UPDATE CASCADE). A row moved by another transaction cannot be locked: a
transaction waiting for it fails ("already moved to another partition") instead of waiting. So filing
holds a share lock on the event's order, which every writer of an order's existing events takes first
(a cancel, the relay's record): they wait for the move, then see the row where it
went; a move skips an order one of them holds (SKIP LOCKED) and files it on a later pass.

What is filed: an event delivered or withdrawn (ENTREGADO, RETIRADO) over FILE_AFTER_S ago, with no live
lease, no open attempt, and no live event depending on it (a cancellation or a webhook notice still waiting
reads its original in the live partition; repository.ORIGINAL_SETTLED). Everything else stays live: what is
pending, and a FALLIDO event, which a person may still replay.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

import psycopg
from psycopg import sql

from nexo import audit
from nexo.db import Conn, Database
from nexo.outbox.partitions import LIVE_ATTEMPTS, LIVE_DAY, LIVE_EVENTS
from nexo.outbox.repository import ENTREGADO, check_retention_days
from nexo.states import EventStatus, sql_constant

log = logging.getLogger(__name__)

# An hour: far longer than a lease or a relay job (seconds to minutes), so what a claimant may still be
# finishing is long over; short enough that the live partition holds about an hour of deliveries.
FILE_AFTER_S = 3600
BATCH = 1000  # events moved per transaction: a short one, its locks held for a fraction of a second
# Adding or dropping a month locks the outbox's tables against writes for an instant; if a long
# transaction holds them, give up rather than queue every order behind the wait, and try on the next pass.
DDL_LOCK_TIMEOUT = "1s"
# Two runners may overlap for a moment when the lease passes on: months are added one runner at a time
# (a transaction-scoped advisory lock, which a pooler in transaction mode keeps; ADR-019). One bigint key:
# the migration runner's locks use the two-key form, another key space.
MONTHS_LOCK = 0x6E65786F0700
TABLES = ("outbox_event", "delivery_attempt")  # the events first: a month's attempts point into its events
_MONTH_NAME = re.compile(r"^outbox_event_(\d{4})_(\d{2})$")

RETIRADO = sql_constant(EventStatus.RETIRADO)
SETTLED_AT = "coalesce(e.delivered_at, e.withdrawn_at, e.created_at)"  # delivered, or withdrawn
_FILEABLE = f"""
           e.status IN ({ENTREGADO}, {RETIRADO})
       AND {SETTLED_AT} < now() - make_interval(secs => %(file_after_s)s)
       AND (e.locked_until IS NULL OR e.locked_until < now())
       AND NOT EXISTS (SELECT 1 FROM {LIVE_ATTEMPTS} a WHERE a.event_id = e.id AND a.finished_at IS NULL)
       AND NOT EXISTS (SELECT 1 FROM {LIVE_EVENTS} d WHERE d.depends_on = e.id)"""
MONTH_OF = f"date_trunc('month', {SETTLED_AT} AT TIME ZONE 'UTC')::date"

# The batch: its events locked, and their orders held (see the module's docstring).
_LOCK_BATCH_SQL = f"""
SELECT e.id, ({SETTLED_AT} AT TIME ZONE 'UTC')::date AS settled_on
  FROM {LIVE_EVENTS} e
  JOIN orders o ON o.id = e.aggregate_id
 WHERE {_FILEABLE}
   AND {MONTH_OF} = ANY(%(months)s::date[])
 LIMIT %(batch)s
   FOR UPDATE OF e SKIP LOCKED
   FOR SHARE OF o SKIP LOCKED
"""
# Through the partitioned tables: a move to another partition is an UPDATE of them, not of the partition.
# The attempts first: moving an event deletes it from the live partition, and its trigger deletes the
# attempts still there (migration 0700).
_MOVE_ATTEMPTS_SQL = f"""
UPDATE delivery_attempt a SET event_settled_on = f.settled_on
  FROM unnest(%(ids)s::uuid[], %(days)s::date[]) AS f(id, settled_on)
 WHERE a.event_settled_on = {LIVE_DAY} AND a.event_id = f.id
"""
_MOVE_EVENTS_SQL = f"""
UPDATE outbox_event e SET settled_on = f.settled_on
  FROM unnest(%(ids)s::uuid[], %(days)s::date[]) AS f(id, settled_on)
 WHERE e.settled_on = {LIVE_DAY} AND e.id = f.id
"""


def month_start(day: date) -> date:
    """The first day of `day`'s month."""
    return day.replace(day=1)


def next_month(month: date) -> date:
    """The first day of the month after `month` (a first day)."""
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


def partition_name(table: str, month: date) -> str:
    """outbox_event_2026_12: the partition of `table` holding the events settled in that month."""
    return f"{table}_{month.year:04d}_{month.month:02d}"


def months_filed(conn: Conn) -> list[date]:
    """The months that have a partition of their own, oldest first."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'outbox_event'::regclass"
    ).fetchall()
    found = [_MONTH_NAME.match(r["relname"]) for r in rows]
    return sorted(date(int(m[1]), int(m[2]), 1) for m in found if m)


def add_month(conn: Conn, month: date) -> bool:
    """Create the month's partitions of both tables, in the caller's transaction (which then commits);
    False if they exist already (another runner added them).

    Created apart and then attached: ATTACH PARTITION takes a lighter lock on the partitioned table than
    CREATE TABLE … PARTITION OF (which would stop its reads too); both stop writes to the tables whose
    keys they touch for an instant, hence the lock timeout.
    """
    month = month_start(month)
    conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(DDL_LOCK_TIMEOUT)))
    conn.execute("SELECT pg_advisory_xact_lock(%s)", [MONTHS_LOCK])
    found = conn.execute("SELECT to_regclass(%s) IS NOT NULL AS found", [partition_name("outbox_event", month)]).fetchone()
    if found and found["found"]:
        return False
    for table in TABLES:
        name = sql.Identifier(partition_name(table, month))
        conn.execute(
            sql.SQL("CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)").format(
                name=name, table=sql.Identifier(table)
            )
        )
        conn.execute(
            sql.SQL("ALTER TABLE {table} ATTACH PARTITION {name} FOR VALUES FROM ({start}) TO ({end})").format(
                table=sql.Identifier(table), name=name, start=sql.Literal(month), end=sql.Literal(next_month(month))
            )
        )
    # The month's attempts point at the month's events (the live pair's key, migration 0700, says why).
    events, attempts = (partition_name(table, month) for table in TABLES)
    conn.execute(
        sql.SQL(
            "ALTER TABLE {attempts} ADD CONSTRAINT {key} FOREIGN KEY (event_id, event_settled_on)"
            " REFERENCES {events} (id, settled_on) DEFERRABLE INITIALLY DEFERRED"
        ).format(attempts=sql.Identifier(attempts), key=sql.Identifier(f"{attempts}_event_fkey"), events=sql.Identifier(events))
    )
    return True


def months_to_file(conn: Conn, *, file_after_s: float = FILE_AFTER_S) -> list[date]:
    """The months of the events ready to be filed (a small set: usually this month and, early in one, the last)."""
    rows = conn.execute(
        f"SELECT DISTINCT {MONTH_OF} AS month FROM {LIVE_EVENTS} e WHERE {_FILEABLE}", {"file_after_s": file_after_s}
    ).fetchall()
    return sorted(r["month"] for r in rows)


def file_batch(conn: Conn, months: list[date], *, batch: int = BATCH, file_after_s: float = FILE_AFTER_S) -> int:
    """Move up to `batch` settled events of these months (each with its partition) out of the live partition,
    with their attempts, in the caller's transaction; how many."""
    if not months:
        return 0
    locked = conn.execute(_LOCK_BATCH_SQL, {"months": months, "batch": batch, "file_after_s": file_after_s}).fetchall()
    if not locked:
        return 0
    moving = {"ids": [r["id"] for r in locked], "days": [r["settled_on"] for r in locked]}
    conn.execute(_MOVE_ATTEMPTS_SQL, moving)
    return conn.execute(_MOVE_EVENTS_SQL, moving).rowcount


@dataclass
class FilingReport:
    """What a pass of file_settled_events did."""

    filed: int = 0
    months_added: list[date] = field(default_factory=list)
    months_waiting: list[date] = field(default_factory=list)  # their partition could not be added this pass
    more: bool = False  # the pass ran out of its time with events still to file


def ensure_months(db: Database, months: list[date]) -> FilingReport:
    """Add the partitions of these months that do not exist yet, each in its own transaction."""
    report = FilingReport()
    with db.reading() as conn:
        existing = set(months_filed(conn))
    for month in sorted(set(months) - existing):
        try:
            with db.transaction() as tx:
                added = add_month(tx.conn, month)
                tx.commit()
            if added:
                report.months_added.append(month)
        except psycopg.errors.LockNotAvailable as exc:  # a writer held the tables past the timeout
            log.warning("outbox history: month %s not added this pass (%s)", month.isoformat()[:7], type(exc).__name__)
            report.months_waiting.append(month)
    return report


def file_settled_events(
    db: Database,
    *,
    batch: int | None = None,
    file_after_s: float = FILE_AFTER_S,
    today: date | None = None,
    budget_s: float | None = None,
) -> FilingReport:
    """One pass of the maintenance runner: add this month's and the next one's partitions ahead of need,
    then file every settled event of a month that has its partition, a batch per transaction; with
    `budget_s`, no batch is started after that many seconds (`more` says events are left)."""
    deadline = None if budget_s is None else time.monotonic() + budget_s
    batch = batch or BATCH
    today = today or datetime.now(UTC).date()
    with db.reading() as conn:
        wanted = months_to_file(conn, file_after_s=file_after_s)
    this_month = month_start(today)
    report = ensure_months(db, [*wanted, this_month, next_month(this_month)])
    with db.reading() as conn:
        ready = [m for m in wanted if m in set(months_filed(conn))]
    while ready:
        with db.transaction() as tx:
            moved = file_batch(tx.conn, ready, batch=batch, file_after_s=file_after_s)
            tx.commit()
        report.filed += moved
        if moved < batch:
            break
        if deadline is not None and time.monotonic() > deadline:
            report.more = True
            break
    log.info(
        "outbox history filed=%d more=%s months_added=%s months_waiting=%s",
        report.filed,
        "yes" if report.more else "no",
        ",".join(m.isoformat()[:7] for m in report.months_added) or "-",
        ",".join(m.isoformat()[:7] for m in report.months_waiting) or "-",
    )
    return report


@dataclass
class DropReport:
    """What drop_expired_months did: the months dropped with their event counts, and those kept and why."""

    dropped: dict[date, int] = field(default_factory=dict)
    kept: dict[date, str] = field(default_factory=dict)


def drop_expired_months(db: Database, *, older_than_days: int, today: date | None = None) -> DropReport:
    """Drop every month whose last day is over `older_than_days` days ago, each in its own transaction.

    A month goes whole: every event in it settled before its end, so every one is past the retention; a
    month is kept until its last day is (events are kept at least the retention, at most a month more).
    A month some dead letter still points into is kept (the foreign key refuses it) until the dead-letter
    purge removes that row, and so is one whose tables a long transaction held past the lock timeout.
    Each drop leaves an audit row, as a purge does.
    """
    check_retention_days(older_than_days)
    today = today or datetime.now(UTC).date()
    cutoff = date.fromordinal(today.toordinal() - older_than_days)
    report = DropReport()
    with db.reading() as conn:
        months = months_filed(conn)
    for month in months:
        if next_month(month) > cutoff:
            continue
        try:
            with db.transaction() as tx:
                report.dropped[month] = _drop_month(tx.conn, month, older_than_days)
                tx.commit()
        except psycopg.errors.ForeignKeyViolation:
            report.kept[month] = "dead_letter"
        except psycopg.errors.LockNotAvailable:
            report.kept[month] = "lock_timeout"
        except psycopg.errors.UndefinedTable:
            continue  # another runner dropped it meanwhile (two overlap for a moment when the lease passes on)
    for month, reason in report.kept.items():
        log.warning("outbox history: month %s past the retention kept (%s)", month.isoformat()[:7], reason)
    return report


def _drop_month(conn: Conn, month: date, older_than_days: int) -> int:
    conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(DDL_LOCK_TIMEOUT)))
    events, attempts = (sql.Identifier(partition_name(table, month)) for table in TABLES)
    counted = conn.execute(sql.SQL("SELECT count(*) AS n FROM {}").format(events)).fetchone()
    deleted = counted["n"] if counted else 0
    # The attempts first: they point into the month's events. Detached before it is dropped, so that the
    # foreign keys pointing into it are checked (a dead letter still there refuses it).
    conn.execute(sql.SQL("DROP TABLE {}").format(attempts))
    conn.execute(sql.SQL("ALTER TABLE outbox_event DETACH PARTITION {}").format(events))
    conn.execute(sql.SQL("DROP TABLE {}").format(events))
    audit.append(
        conn,
        actor=audit.SYSTEM_ACTOR,
        action="outbox_event.purged",
        object_type="outbox_event_retention",
        object_id=partition_name("outbox_event", month),
        details={"deleted": deleted, "older_than_days": older_than_days, "month": month.isoformat()[:7]},
    )
    return deleted
