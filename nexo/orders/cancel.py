"""Cancel an order (guarantee 19): one transaction gives back everything it holds and tells the outside.

While nothing has left the warehouse (CONFIRMADO or PENDIENTE_AUTORIZACION), a cancel sets ANULADO,
releases every reservation of the order (`reserved` down by exactly what it held), lowers the client's
exposure by what the order charged (a pending order charged nothing), withdraws or compensates its
outbox events (ADR-017), and writes the audit row with who and why — together or not at all.

Lock order: the order row, the client row, the order's pending dead letters and events, then its
reservations and stock rows in the SKU lock order. The credit decisions take order → client → stock
too, and the relay takes a batch's orders before their events, so no two writers wait in a cycle.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from nexo import audit
from nexo.db import Conn, OpensTransactions
from nexo.orders import repository as repo
from nexo.outbox import webhooks
from nexo.outbox.order_events import cancel_order_events
from nexo.outbox.wakeup import Wakeup
from nexo.states import CANCELLABLE, OrderStatus
from nexo.stock import reservations as stock

log = logging.getLogger(__name__)
MAX_REASON = 500


@dataclass(frozen=True)
class CancelOrder:
    """Withdraw an order the client no longer wants; the reason is required."""

    order_id: uuid.UUID
    actor_id: int
    actor_username: str
    reason: str
    may_cancel_any: bool  # credit and the owner; a salesperson cancels only their own orders
    api_key_id: int | None = None
    correlation_id: str | None = None


@dataclass(frozen=True)
class Cancelled:
    """The order is ANULADO now: what was released and which cancellations go out."""

    order_id: uuid.UUID
    released: tuple[tuple[str, int], ...]
    given_back_cents: int
    event_ids: tuple[uuid.UUID, ...] = field(default=())
    outcome: ClassVar[str] = "cancelled"


@dataclass(frozen=True)
class AlreadyCancelled:
    """It was cancelled before: nothing was released again."""

    order_id: uuid.UUID
    outcome: ClassVar[str] = "already_cancelled"


@dataclass(frozen=True)
class NotCancellable:
    """Rejected, or something already left the warehouse (order_not_cancellable)."""

    order_id: uuid.UUID
    status: OrderStatus
    outcome: ClassVar[str] = "not_cancellable"


@dataclass(frozen=True)
class NotFound:
    """No such order, or one this person may not cancel (someone else's, for a salesperson)."""

    order_id: uuid.UUID
    outcome: ClassVar[str] = "not_found"


CancelResult = Cancelled | AlreadyCancelled | NotCancellable | NotFound


def cancel_order(db: OpensTransactions, cmd: CancelOrder, wakeup: Wakeup | None = None) -> CancelResult:
    """Cancel the order (see the module docstring); the relay is rung after the commit (ADR-004)."""
    reason = cmd.reason.strip()
    if not reason or len(reason) > MAX_REASON:
        raise ValueError("a cancel needs a reason of 1 to 500 characters")  # the forms refuse it first
    with db.transaction() as tx:
        result = _cancel(tx.conn, cmd, reason)
        if isinstance(result, Cancelled):
            tx.commit()
    if isinstance(result, Cancelled) and result.event_ids and wakeup is not None:
        wakeup.request_delivery(list(result.event_ids))
    log.info("cancel_order order=%s actor=%s outcome=%s", cmd.order_id, cmd.actor_username, result.outcome)
    return result


def _cancel(conn: Conn, cmd: CancelOrder, reason: str) -> CancelResult:
    order = repo.lock_order(conn, cmd.order_id)
    if order is None or not (cmd.may_cancel_any or order["salesperson_id"] == cmd.actor_id):
        return NotFound(cmd.order_id)
    if order["status"] == OrderStatus.ANULADO:
        return AlreadyCancelled(cmd.order_id)
    if order["status"] not in CANCELLABLE:
        return NotCancellable(cmd.order_id, OrderStatus(order["status"]))
    repo.mark_cancelled(conn, cmd.order_id, actor_id=cmd.actor_id, reason=reason)
    given_back = order["charged_cents"]
    exposure_after = repo.give_back_charge(conn, order["client_id"], given_back) if given_back else None
    events = None
    if order["status"] == OrderStatus.CONFIRMADO:
        events = cancel_order_events(
            conn,
            order_id=cmd.order_id,
            entered_at=order["created_at"],
            actor=cmd.actor_username,
            reason=reason,
            request_id=cmd.correlation_id,
        )
    released = stock.release_all(conn, cmd.order_id)
    # The integration that posted the order hears of it, after any notice it already had (ADR-022).
    notices = webhooks.notify(conn, cmd.order_id, "order.cancelled", request_id=cmd.correlation_id)
    audit.append(
        conn,
        actor=cmd.actor_username,
        action="order.cancelled",
        object_type="order",
        object_id=cmd.order_id,
        details={
            "reason": reason,
            "status_before": order["status"],
            "client_id": str(order["client_id"]),
            "given_back_cents": given_back,
            "exposure_after_cents": exposure_after,
            "released": [{"sku": r["sku"], "quantity": r["quantity"]} for r in released],
            "withdrawn_event_ids": [str(e) for e in events.withdrawn] if events else [],
            "cancellation_event_ids": [str(e) for e in events.cancellations] if events else [],
            "api_key_id": cmd.api_key_id,
        },
    )
    return Cancelled(
        cmd.order_id,
        released=tuple((r["sku"], r["quantity"]) for r in released),
        given_back_cents=given_back,
        event_ids=(events.cancellations if events else ()) + tuple(notices),
    )
