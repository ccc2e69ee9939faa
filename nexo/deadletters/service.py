"""Dead-letter use cases (ADR-010): each one owns its transaction and writes its audit row inside it.

Business outcomes come back as values (the ActionResult and BulkResult unions below, in the style of
the credit use cases); the views map them to HTTP.
The relay is woken only after commit, and no network call happens while a transaction is open (ADR-004).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

from nexo import audit
from nexo.db import Conn, Database
from nexo.deadletters import queries, repository
from nexo.outbox import repository as outbox
from nexo.outbox.wakeup import Wakeup
from nexo.states import DeadLetterStatus

log = logging.getLogger(__name__)

# ADR-010's candidate cap: a list or a count never reads more than this many rows, and says so when
# it stops (X-Truncated), so a provider outage that piles up dead letters cannot make the page slow.
CANDIDATE_CAP = 1000
# The most a single group action touches; the preview says when a group is bigger.
BULK_CAP = 500


@dataclass(frozen=True)
class ListPage:
    """One page of the list, the capped total and whether the cap cut it."""

    rows: list[dict]
    total: int
    truncated: bool
    page: int
    size: int
    clients: list[dict] = field(default_factory=list)

    @property
    def pages(self) -> int:
        """How many pages the (capped) total makes."""
        return max(1, -(-self.total // self.size))


@dataclass(frozen=True)
class Detail:
    """Everything the detail page shows about one dead letter."""

    dead_letter: dict
    attempts: list[dict]
    siblings: list[dict]
    history: list[dict]

    @property
    def key_check(self) -> dict | None:
        """The latest answer the destination gave about this Idempotency-Key, if anyone asked."""
        checks = [h for h in self.history if h["action"] == "dead_letter.key_checked"]
        return checks[-1] if checks else None


@dataclass(frozen=True)
class Done:
    """The dead letter was replayed (status resolved) or discarded (status discarded) by resolved_by."""

    dead_letter_id: int
    event_id: uuid.UUID
    status: DeadLetterStatus
    resolved_by: str
    outcome: ClassVar[str] = "done"


@dataclass(frozen=True)
class NotFound:
    """No dead letter with that id."""

    dead_letter_id: int
    outcome: ClassVar[str] = "not_found"


@dataclass(frozen=True)
class AlreadyResolved:
    """Someone got there first: the dead letter is no longer pending (who, when, and what they did)."""

    dead_letter_id: int
    event_id: uuid.UUID
    status: DeadLetterStatus
    resolved_by: str | None
    resolved_at: datetime | None
    outcome: ClassVar[str] = "conflict"


@dataclass(frozen=True)
class EventNotFailed:
    """The dead letter is pending but its event is not FALLIDO any more: nothing was replayed (ADR-010)."""

    dead_letter_id: int
    event_id: uuid.UUID
    outcome: ClassVar[str] = "conflict"
    status: ClassVar[DeadLetterStatus] = DeadLetterStatus.PENDING


# What replay/discard decided; the views map each case to 303 / 404 / 409. `outcome` is each case's
# short name, for logs and tests.
ActionResult = Done | NotFound | AlreadyResolved | EventNotFailed


@dataclass(frozen=True)
class GroupDone:
    """A group action went through: which ids changed, and how many had stopped being pending."""

    touched: list[int]
    skipped: int
    outcome: ClassVar[str] = "done"


@dataclass(frozen=True)
class GroupChanged:
    """Some dead letter of the group had an event no longer FALLIDO: nothing was touched (rolled back)."""

    skipped: int
    outcome: ClassVar[str] = "conflict"


BulkResult = GroupDone | GroupChanged


def list_dead_letters(db: Database, f: queries.ListFilter, *, page: int, size: int) -> ListPage:
    """A page of dead-letter summaries (never the payload) with a total capped at CANDIDATE_CAP."""
    with db.reading() as conn:
        counted = queries.count_capped(conn, f, CANDIDATE_CAP)
        truncated = counted > CANDIDATE_CAP
        total = min(counted, CANDIDATE_CAP)
        offset = (page - 1) * size
        # Rows past the cap are not served: the admin narrows the filter instead of paging forever.
        limit = max(0, min(size, CANDIDATE_CAP - offset))
        rows = queries.list_page(conn, f, limit=limit, offset=offset) if limit else []
        clients = queries.clients(conn, f.destinations, f.client_id)
    if truncated:
        log.warning(
            "dead-letter list truncated at %d candidates (destinations=%s status=%s)",
            CANDIDATE_CAP,
            ",".join(f.destinations),
            f.status or "any",
        )
    return ListPage(rows=rows, total=total, truncated=truncated, page=page, size=size, clients=clients)


def group_counts(db: Database, destinations: tuple[str, ...]) -> list[dict]:
    """Pending dead letters counted per destination and error signature."""
    with db.reading() as conn:
        return queries.groups(conn, destinations=destinations)


def summaries(db: Database, destination: str, ids: list[int], limit: int = 50) -> list[dict]:
    """The first summaries of a previewed group, for the admin to eyeball before confirming."""
    if not ids:
        return []
    with db.reading() as conn:
        return queries.list_page(conn, queries.ListFilter(destinations=(destination,), ids=tuple(ids)), limit=limit, offset=0)


def view_dead_letter(db: Database, dead_letter_id: int, actor: str, *, audit_view: bool = True) -> Detail | None:
    """Load one dead letter for the detail page and record who looked at it; None if it does not exist."""
    with db.transaction() as tx:
        row = queries.dead_letter(tx.conn, dead_letter_id)
        if row is None:
            return None  # nothing to audit: there is no object to name
        if audit_view:
            audit.append(
                tx.conn,
                actor=actor,
                action="dead_letter.viewed",
                object_type="dead_letter",
                object_id=dead_letter_id,
                details={"status": row["status"], "destination": row["destination"], "event_id": str(row["event_id"])},
            )
        detail = Detail(
            dead_letter=row,
            attempts=queries.attempts(tx.conn, row["event_id"], row["event_settled_on"]),
            siblings=queries.siblings(tx.conn, row["event_id"], row["destination"]),
            history=queries.history(tx.conn, dead_letter_id),
        )
        tx.commit()
    return detail


def _conflict(conn: Conn, dead_letter_id: int) -> ActionResult:
    state = repository.current_state(conn, dead_letter_id)
    if state is None:
        return NotFound(dead_letter_id)
    return AlreadyResolved(
        dead_letter_id,
        event_id=state["event_id"],
        status=DeadLetterStatus(state["status"]),
        resolved_by=state["resolved_by"],
        resolved_at=state["resolved_at"],
    )


def replay(db: Database, dead_letter_id: int, actor: str, note: str | None = None, wakeup: Wakeup | None = None) -> ActionResult:
    """Resolve a pending dead letter and put its event back to PENDIENTE, same id (same Idempotency-Key).

    One transaction: dead letter → resolved, event → PENDIENTE due now, audit row. The relay is woken
    after commit; if the wake-up is lost the sweeper still finds the event (ADR-004).
    """
    with db.transaction() as tx:
        state = repository.current_state(tx.conn, dead_letter_id)
        if state is None:
            return NotFound(dead_letter_id)
        row = repository.resolve_pending(
            tx.conn,
            dead_letter_id=dead_letter_id,
            destination=state["destination"],
            status=DeadLetterStatus.RESOLVED,
            actor=actor,
            note=note or None,
        )
        if row is None:
            return _conflict(tx.conn, dead_letter_id)
        if outbox.requeue_events(tx.conn, event_ids=[row["event_id"]], destination=row["destination"]) != 1:
            # A pending dead letter whose event is not FALLIDO breaks the invariant the relay keeps;
            # refuse (rolled back) rather than resolve something that was not replayed.
            log.error("dead letter %s is pending but its event %s is not FALLIDO", dead_letter_id, row["event_id"])
            return EventNotFailed(dead_letter_id, event_id=row["event_id"])
        audit.append(
            tx.conn,
            actor=actor,
            action="dead_letter.replayed",
            object_type="dead_letter",
            object_id=dead_letter_id,
            details={
                "event_id": str(row["event_id"]),
                "destination": row["destination"],
                "attempts_before": row["attempts"],
                "note": note or None,
            },
        )
        tx.commit()
    if wakeup is not None:
        wakeup.request_delivery([row["event_id"]])
    log.info("dead letter %s replayed by %s (event %s)", dead_letter_id, actor, row["event_id"])
    return Done(dead_letter_id, event_id=row["event_id"], status=DeadLetterStatus.RESOLVED, resolved_by=actor)


def discard(db: Database, dead_letter_id: int, actor: str, reason: str) -> ActionResult:
    """Close a pending dead letter without delivering it; the event stays FALLIDO and the reason is kept."""
    if not reason or not reason.strip():
        raise ValueError("a discard needs a reason")  # the form refuses it first; this is the last guard
    with db.transaction() as tx:
        state = repository.current_state(tx.conn, dead_letter_id)
        if state is None:
            return NotFound(dead_letter_id)
        row = repository.resolve_pending(
            tx.conn,
            dead_letter_id=dead_letter_id,
            destination=state["destination"],
            status=DeadLetterStatus.DISCARDED,
            actor=actor,
            note=reason.strip(),
        )
        if row is None:
            return _conflict(tx.conn, dead_letter_id)
        audit.append(
            tx.conn,
            actor=actor,
            action="dead_letter.discarded",
            object_type="dead_letter",
            object_id=dead_letter_id,
            details={"event_id": str(row["event_id"]), "destination": row["destination"], "reason": reason.strip()},
        )
        tx.commit()
    log.info("dead letter %s discarded by %s (event %s)", dead_letter_id, actor, row["event_id"])
    return Done(dead_letter_id, event_id=row["event_id"], status=DeadLetterStatus.DISCARDED, resolved_by=actor)


def preview_group(db: Database, f: queries.ListFilter) -> tuple[list[int], bool]:
    """The pending ids a group action would touch (at most BULK_CAP) and whether the group is bigger."""
    with db.reading() as conn:
        ids = queries.pending_ids(conn, f, limit=BULK_CAP + 1)
    return ids[:BULK_CAP], len(ids) > BULK_CAP


def act_on_group(
    db: Database,
    *,
    action: str,
    destination: str,
    ids: list[int],
    actor: str,
    signature: str | None,
    note: str | None,
    wakeup: Wakeup | None = None,
) -> BulkResult:
    """Replay or discard exactly the previewed ids of one destination; rows no longer pending are skipped.

    Only the ids the preview showed are touched, so dead letters that appeared after it are left alone.
    One transaction for the group, one audit row per dead letter (sharing a batch id).
    """
    if action not in ("replay", "discard") or not ids or len(ids) > BULK_CAP:
        raise ValueError("a group action needs replay/discard and 1..BULK_CAP ids")
    if action == "discard" and not (note and note.strip()):
        raise ValueError("a discard needs a reason")
    batch = str(uuid.uuid4())
    status = DeadLetterStatus.RESOLVED if action == "replay" else DeadLetterStatus.DISCARDED
    with db.transaction() as tx:
        rows = repository.resolve_pending_many(
            tx.conn, dead_letter_ids=ids, destination=destination, status=status, actor=actor, note=note or None
        )
        event_ids = [r["event_id"] for r in rows]
        if action == "replay" and outbox.requeue_events(tx.conn, event_ids=event_ids, destination=destination) != len(rows):
            log.error("group replay refused: some pending dead letters had events not in FALLIDO")
            return GroupChanged(skipped=len(ids))
        for r in rows:
            details = {
                "event_id": str(r["event_id"]),
                "destination": destination,
                "batch": batch,
                "group_size": len(ids),
                "signature": signature or None,
            }
            details.update({"attempts_before": r["attempts"], "note": note or None} if action == "replay" else {"reason": note})
            audit.append(
                tx.conn,
                actor=actor,
                action=f"dead_letter.{'replayed' if action == 'replay' else 'discarded'}",
                object_type="dead_letter",
                object_id=r["id"],
                details=details,
            )
        tx.commit()
    if action == "replay" and event_ids and wakeup is not None:
        wakeup.request_delivery(event_ids)
    touched = sorted(r["id"] for r in rows)
    log.info(
        "group %s by %s: destination=%s touched=%d skipped=%d batch=%s",
        action,
        actor,
        destination,
        len(touched),
        len(ids) - len(touched),
        batch,
    )
    return GroupDone(touched=touched, skipped=len(ids) - len(touched))
