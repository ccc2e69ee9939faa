"""CU-02 use cases: the credit officer approves or rejects an order waiting for authorization.

Each decision is ONE transaction (guarantee 7): the order's new state, its reservations, the client's
exposure, the outbox events and the audit row are kept together or not at all. The relay is woken
only after the commit (ADR-004). Business outcomes are values (the dataclasses below), never
exceptions: the view maps them to 303 / 404 / 409.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from psycopg.rows import DictRow

from nexo import audit
from nexo.credit import repository as repo
from nexo.credit.decision_notice import queue_decision
from nexo.credit.events import order_event_payload
from nexo.db import Conn, Database
from nexo.outbox import webhooks
from nexo.outbox.order_events import add_order_confirmed_events
from nexo.outbox.wakeup import Wakeup
from nexo.states import BillingStatus, OrderStatus
from nexo.stock import reservations as stock
from nexo.telemetry import metrics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApproveOrder:
    """Authorize an order's excess over the client's limit.

    seen_* are the figures the officer had on screen; when given, the approval only goes through if
    they still hold ("approving re-checks nothing silently", CU-02).
    """

    order_id: uuid.UUID
    officer_id: int
    officer_username: str
    note: str | None = None
    seen_exposure_cents: int | None = None
    seen_limit_cents: int | None = None
    correlation_id: str | None = None


@dataclass(frozen=True)
class RejectOrder:
    """Refuse an order waiting for credit; the reason is required (CU-02)."""

    order_id: uuid.UUID
    officer_id: int
    officer_username: str
    reason: str
    correlation_id: str | None = None

    def __post_init__(self):
        if not (self.reason or "").strip():
            raise ValueError("RejectOrder needs a non-empty reason")


@dataclass(frozen=True)
class CreditFigures:
    """The client's exposure and limit, and the order's total, at one moment."""

    exposure_cents: int
    limit_cents: int
    total_cents: int

    @property
    def excess_cents(self) -> int:
        """How far over the limit the client ends if this order is authorized (RN-01)."""
        return self.exposure_cents + self.total_cents - self.limit_cents


@dataclass(frozen=True)
class Decided:
    """The decision was recorded: status CONFIRMADO or RECHAZADO."""

    order_id: uuid.UUID
    status: OrderStatus
    figures: CreditFigures
    event_ids: tuple[uuid.UUID, ...] = ()

    @property
    def outcome(self) -> str:
        """'approved' or 'rejected', for logs and metric labels."""
        return "approved" if self.status == OrderStatus.CONFIRMADO else "rejected"


@dataclass(frozen=True)
class AlreadyDecided:
    """The order is no longer pending; decided_by is None when nobody from credit decided it."""

    order_id: uuid.UUID
    status: OrderStatus
    decided_by: str | None
    decided_at: datetime | None
    outcome: ClassVar[str] = "already_decided"


@dataclass(frozen=True)
class NotFound:
    """No order with that id."""

    order_id: uuid.UUID
    outcome: ClassVar[str] = "not_found"


@dataclass(frozen=True)
class FiguresChanged:
    """The client's credit moved since the officer looked: nothing was approved, she must look again."""

    order_id: uuid.UUID
    seen: CreditFigures
    current: CreditFigures
    outcome: ClassVar[str] = "figures_changed"


@dataclass(frozen=True)
class ReservationReleased:
    """Some of the order's units are no longer reserved: approving would confirm unreserved stock."""

    order_id: uuid.UUID
    skus: tuple[str, ...]
    outcome: ClassVar[str] = "reservation_released"


@dataclass(frozen=True)
class OwnOrder:
    """Separation of duties (ADR-018): nobody decides the credit of an order they entered themselves."""

    order_id: uuid.UUID
    outcome: ClassVar[str] = "own_order"


# What a decision came to; the view maps each case to 303 / 403 / 404 / 409. `outcome` is each case's short
# name, for logs and metric labels (the same style as create_order's and the dead-letter actions').
DecisionResult = Decided | AlreadyDecided | NotFound | FiguresChanged | ReservationReleased | OwnOrder


def approve_order(db: Database, cmd: ApproveOrder, wakeup: Wakeup | None = None, *, mail: bool = False) -> DecisionResult:
    """Confirm a pending order: reservations FIRME, exposure += total, two outbox events, audit row.

    `wakeup` rings the relay after the commit; without one the sweeper finds the events (ADR-004). `mail`
    (SMTP_URL set) queues the salesperson's email in the same transaction.
    """
    started = time.perf_counter()
    with db.transaction() as tx:
        result = _approve(tx.conn, cmd, mail)
        if isinstance(result, Decided):
            tx.commit()
        # Any other outcome leaves the transaction uncommitted: it rolls back, status update included.
    metrics.observe_order_transaction(time.perf_counter() - started, "credit_" + result.outcome)
    if isinstance(result, Decided) and wakeup is not None:
        wakeup.request_delivery(result.event_ids)  # after the commit, never inside it (ADR-004)
    log.info("approve_order order=%s officer=%s outcome=%s", cmd.order_id, cmd.officer_id, result.outcome)
    return result


def reject_order(db: Database, cmd: RejectOrder, wakeup: Wakeup | None = None, *, mail: bool = False) -> DecisionResult:
    """Refuse a pending order: status RECHAZADO, soft reservations released, audit row with the reason;
    `mail` (SMTP_URL set) queues the salesperson's email in the same transaction."""
    started = time.perf_counter()
    with db.transaction() as tx:
        result = _reject(tx.conn, cmd, mail)
        if isinstance(result, Decided):
            tx.commit()
    metrics.observe_order_transaction(time.perf_counter() - started, "credit_" + result.outcome)
    if isinstance(result, Decided) and result.event_ids and wakeup is not None:
        wakeup.request_delivery(result.event_ids)  # the integration's notice, after the commit (ADR-004)
    log.info("reject_order order=%s officer=%s outcome=%s", cmd.order_id, cmd.officer_id, result.outcome)
    return result


def _approve(conn: Conn, cmd: ApproveOrder, mail: bool) -> DecisionResult:
    # Lock order: order row (this UPDATE) -> client row -> reservations (see repository docstring).
    order = repo.mark_decided(
        conn,
        cmd.order_id,
        status=OrderStatus.CONFIRMADO,
        billing_status=BillingStatus.PENDIENTE_FACTURACION,
        officer_id=cmd.officer_id,
        note=_clean(cmd.note),
    )
    if order is None:
        return _not_pending(conn, cmd.order_id)
    if order["salesperson_id"] == cmd.officer_id:
        return OwnOrder(cmd.order_id)  # the decision rolls back with the transaction
    client = repo.lock_client(conn, order["client_id"])
    now = CreditFigures(client["exposure_cents"], client["credit_limit_cents"], order["total_cents"])
    seen = CreditFigures(
        _given(cmd.seen_exposure_cents, now.exposure_cents), _given(cmd.seen_limit_cents, now.limit_cents), now.total_cents
    )
    reservations = stock.lock_reservations(conn, cmd.order_id)
    # Laura must not confirm what nobody reserved (CU-02): a released (or missing) reservation refuses.
    released = tuple(r["sku"] for r in reservations if r["released_at"] is not None)
    if released or not reservations:
        return ReservationReleased(cmd.order_id, released)
    if seen != now:
        return FiguresChanged(cmd.order_id, seen=seen, current=now)
    stock.make_firm(conn, cmd.order_id)
    exposure_after = repo.add_exposure(conn, order["client_id"], order["total_cents"])
    payload = order_event_payload(conn, cmd.order_id)
    event_ids = tuple(add_order_confirmed_events(conn, order_id=cmd.order_id, payload=payload, request_id=cmd.correlation_id))
    # The integration that posted the order hears of the approval (ADR-022).
    event_ids += tuple(webhooks.notify(conn, cmd.order_id, "order.approved", request_id=cmd.correlation_id))
    audit.append(
        conn,
        actor=cmd.officer_username,
        action="credit.approved",
        object_type="order",
        object_id=cmd.order_id,
        details={
            **_figures_details(client, now),
            "exposure_after_cents": exposure_after,
            # False when the request carried no figures (a bare POST): approved on these figures
            # without the officer having been shown them.
            "figures_confirmed": cmd.seen_exposure_cents is not None,
            "note": _clean(cmd.note),
            "event_ids": [str(e) for e in event_ids],
        },
    )
    if mail:  # part of the decision: both or neither (nexo/mail/)
        queue_decision(conn, cmd.order_id, approved=True, officer_id=cmd.officer_id, words=_clean(cmd.note))
    return Decided(cmd.order_id, OrderStatus.CONFIRMADO, now, event_ids)


def _reject(conn: Conn, cmd: RejectOrder, mail: bool) -> DecisionResult:
    order = repo.mark_decided(
        conn,
        cmd.order_id,
        status=OrderStatus.RECHAZADO,
        billing_status=BillingStatus.NO_APLICA,
        officer_id=cmd.officer_id,
        note=cmd.reason.strip(),
    )
    if order is None:
        return _not_pending(conn, cmd.order_id)
    if order["salesperson_id"] == cmd.officer_id:
        return OwnOrder(cmd.order_id)
    client = repo.read_client(conn, order["client_id"])
    figures = CreditFigures(client["exposure_cents"], client["credit_limit_cents"], order["total_cents"])
    # The soft reservations and their stock rows, in the one lock order order entry also uses (ADR-002).
    released = stock.release_soft(conn, cmd.order_id)
    audit.append(
        conn,
        actor=cmd.officer_username,
        action="credit.rejected",
        object_type="order",
        object_id=cmd.order_id,
        details={
            **_figures_details(client, figures),
            "reason": cmd.reason.strip(),
            "released": [{"sku": r["sku"], "quantity": r["quantity"]} for r in released],
        },
    )
    if mail:  # part of the decision: both or neither (nexo/mail/)
        queue_decision(conn, cmd.order_id, approved=False, officer_id=cmd.officer_id, words=cmd.reason.strip())
    notices = webhooks.notify(conn, cmd.order_id, "order.rejected", request_id=cmd.correlation_id)  # ADR-022
    return Decided(cmd.order_id, OrderStatus.RECHAZADO, figures, tuple(notices))


def _not_pending(conn: Conn, order_id: uuid.UUID) -> AlreadyDecided | NotFound:
    row = repo.find_decision(conn, order_id)
    if row is None:
        return NotFound(order_id)
    return AlreadyDecided(order_id, OrderStatus(row["status"]), row["decided_by_name"], row["decided_at"])


def _figures_details(client: DictRow, figures: CreditFigures) -> dict:
    return {
        "client_id": str(client["id"]),
        "client_name": client["name"],
        "tier": client["tier"],
        "limit_cents": figures.limit_cents,
        "exposure_cents": figures.exposure_cents,
        "total_cents": figures.total_cents,
        "excess_cents": figures.excess_cents,
    }


def _given(value: int | None, default: int) -> int:
    return default if value is None else value


def _clean(note: str | None) -> str | None:
    return (note or "").strip() or None
