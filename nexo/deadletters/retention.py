"""Retention (ADR-010): purge terminal dead letters after a grace; delivered events only if configured.

Pending dead letters are never purged: they wait for a human decision. Delivered outbox events are
kept for ever unless OUTBOX_RETENTION_DAYS is set, because nobody has decided how long to keep them
(docs/unknowns.md, OUTBOX-RETENTION). Once it is, the months of history past it are dropped whole
(nexo/outbox/history.py, ADR-019), after the dead letters, whose rows would keep a month; what is still
in the live partition past it is deleted per destination, in short batched transactions. Every purge
logs its counts as one key=value line; each batch or month that deletes something leaves an audit row.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from nexo import audit
from nexo.db import Database
from nexo.deadletters import repository
from nexo.deadletters.queries import DESTINATIONS
from nexo.outbox import history
from nexo.outbox import repository as outbox
from nexo.settings import Settings

log = logging.getLogger(__name__)
BATCH = 1000


@dataclass
class RetentionReport:
    """How many rows each purge removed, per destination; outbox_events is None when that purge is off."""

    dead_letters: dict[str, int] = field(default_factory=dict)
    outbox_events: dict[str, int] | None = None
    months_dropped: dict[str, int] = field(default_factory=dict)  # "2026-01": events dropped with their month
    failures: list[str] = field(default_factory=list)


def _require_days(days: int, name: str) -> None:
    # Same guard as the repository, but before any destination is touched (ADR-010: fewer than 1 day would mean everything).
    if not isinstance(days, int) or isinstance(days, bool) or days < 1:
        raise ValueError(f"{name} must be a whole number of days, at least 1 (got {days!r})")


def _purge_in_batches(db: Database, purge: Callable, *, object_type: str, destination: str, days: int, batch: int) -> int:
    total = 0
    while True:
        with db.transaction() as tx:
            ids = purge(tx.conn, destination, days, batch)
            if ids:
                audit.append(
                    tx.conn,
                    actor=audit.SYSTEM_ACTOR,
                    action=f"{object_type}.purged",
                    object_type=f"{object_type}_retention",
                    object_id=destination,
                    details={"deleted": len(ids), "older_than_days": days, "ids": [str(i) for i in ids]},
                )
            tx.commit()
        total += len(ids)
        if len(ids) < batch:
            return total


def purge_dead_letters(db: Database, *, destination: str, grace_days: int, batch: int = BATCH) -> int:
    """Delete one destination's resolved/discarded dead letters older than the grace; refuse grace < 1."""
    _require_days(grace_days, "grace_days")
    return _purge_in_batches(
        db,
        lambda conn, dest, days, n: repository.purge_terminal_dead_letters(conn, destination=dest, grace_days=days, batch=n),
        object_type="dead_letter",
        destination=destination,
        days=grace_days,
        batch=batch,
    )


def purge_delivered_events(db: Database, *, destination: str, older_than_days: int, batch: int = BATCH) -> int:
    """Delete one destination's ENTREGADO outbox events delivered more than older_than_days ago."""
    _require_days(older_than_days, "older_than_days")
    return _purge_in_batches(
        db,
        lambda conn, dest, days, n: outbox.purge_delivered_events(conn, destination=dest, older_than_days=days, batch=n),
        object_type="outbox_event",
        destination=destination,
        days=older_than_days,
        batch=batch,
    )


def run_retention(db: Database, settings: Settings) -> RetentionReport:
    """One retention pass over every destination; a failing destination is logged and does not stop the others."""
    _require_days(settings.dead_letter_grace_days, "DEAD_LETTER_GRACE_DAYS")
    if settings.outbox_retention_days is not None:
        _require_days(settings.outbox_retention_days, "OUTBOX_RETENTION_DAYS")
    report = RetentionReport()
    for destination in DESTINATIONS:
        try:
            report.dead_letters[destination] = n = purge_dead_letters(
                db, destination=destination, grace_days=settings.dead_letter_grace_days
            )
            log.info(
                "retention purge table=dead_letter destination=%s deleted=%d grace_days=%d",
                destination,
                n,
                settings.dead_letter_grace_days,
            )
        except Exception:
            log.exception("retention purge failed table=dead_letter destination=%s", destination)
            report.failures.append(f"dead_letter:{destination}")
    if settings.outbox_retention_days is None:
        log.info(
            "retention skipped table=outbox_event reason=OUTBOX_RETENTION_DAYS_unset "
            "policy=undefined action=keep_all (docs/unknowns.md OUTBOX-RETENTION)"
        )
        return report
    try:
        dropped = history.drop_expired_months(db, older_than_days=settings.outbox_retention_days)
        for month, n in dropped.dropped.items():
            report.months_dropped[month.isoformat()[:7]] = n
            log.info(
                "retention drop table=outbox_event month=%s deleted=%d older_than_days=%d",
                month.isoformat()[:7],
                n,
                settings.outbox_retention_days,
            )
    except Exception:
        log.exception("retention drop failed table=outbox_event")
        report.failures.append("outbox_event:months")
    report.outbox_events = {}
    for destination in DESTINATIONS:
        try:
            report.outbox_events[destination] = n = purge_delivered_events(
                db, destination=destination, older_than_days=settings.outbox_retention_days
            )
            log.info(
                "retention purge table=outbox_event destination=%s deleted=%d older_than_days=%d",
                destination,
                n,
                settings.outbox_retention_days,
            )
        except Exception:
            log.exception("retention purge failed table=outbox_event destination=%s", destination)
            report.failures.append(f"outbox_event:{destination}")
    return report
