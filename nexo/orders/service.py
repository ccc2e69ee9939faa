"""CU-01 create_order: one transaction that claims the intent, prices, decides credit, reserves and records.

Lock order inside the transaction: idempotency key row → client row → stock rows in the SKU lock
order of nexo/stock/lock_order.py. The credit decisions (nexo/credit) take order row → client → stock in
that same order, so no two writers ever wait for each other in a circle (ADR-002).
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass

from psycopg.rows import DictRow

from nexo.db import Conn, OpensTransactions
from nexo.orders import repository as repo
from nexo.orders.commands import (
    INSUFFICIENT_STOCK,
    INVALID_SKU,
    PRICE_SOURCE_UNAVAILABLE,
    Confirmed,
    Conflict,
    CreateOrder,
    Invalid,
    LineProblem,
    OrderResult,
    PendingAuthorization,
    Rejected,
    Replayed,
    validate,
)
from nexo.orders.credit_notice import queue_waiting_for_credit
from nexo.orders.fingerprint import FINGERPRINT_VERSION, fingerprint, is_known_version, normalise_sku
from nexo.outbox import webhooks
from nexo.outbox.order_events import add_order_confirmed_events, order_payload
from nexo.outbox.wakeup import Wakeup
from nexo.states import OrderStatus, ReservationKind
from nexo.stock import reservations as stock
from nexo.stock.lock_order import in_lock_order
from nexo.telemetry import metrics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _PricedLine:
    product_id: uuid.UUID
    sku: str
    quantity: int
    unit_price_cents: int


def create_order(db: OpensTransactions, cmd: CreateOrder, wakeup: Wakeup | None = None, *, mail: bool = False) -> OrderResult:
    """Create the order of one salesperson intent, or replay / refuse it; see the module docstring.

    `wakeup` rings the relay after the commit; without one the sweeper finds the events (ADR-004). `mail`
    (SMTP_URL set) queues the credit officers' email of an order left waiting, in the same transaction.
    """
    errors = validate(cmd)
    if errors:
        return Invalid(errors)
    started = time.perf_counter()
    event_ids: list[uuid.UUID] = []
    with db.transaction() as tx:
        result = _decide(tx.conn, cmd, event_ids, mail)
        if isinstance(result, Confirmed | PendingAuthorization):
            tx.commit()
        # Every other outcome leaves the block uncommitted: the transaction rolls back, key included
        # (ADR-005: a business rejection is evaluated again on retry).
    metrics.observe_order_transaction(time.perf_counter() - started, result.outcome)
    if isinstance(result, Conflict):
        metrics.count_request_id_reused()
    if event_ids and wakeup is not None:
        wakeup.request_delivery(event_ids)  # after the commit, never inside it (ADR-004)
    log.info(
        "create_order request=%s outcome=%s order=%s reasons=%s",
        cmd.request_id,
        result.outcome,
        getattr(result, "order_id", None),
        ",".join(getattr(result, "reasons", ())) or "-",
    )
    return result


def command_fingerprint(cmd: CreateOrder, version: int = FINGERPRINT_VERSION) -> str:
    """The ADR-006 fingerprint of a command, in the given version."""
    return fingerprint(cmd.client_id, cmd.warehouse_id, [(line.sku, line.quantity) for line in cmd.lines], version)


def _decide(conn: Conn, cmd: CreateOrder, event_ids: list[uuid.UUID], mail: bool) -> OrderResult:
    # 1. Claim the intent first, inside the transaction (RN-06, ADR-005, ADR-007).
    claim = repo.claim_request(conn, cmd.request_id, command_fingerprint(cmd), FINGERPRINT_VERSION)
    if not claim.inserted:
        return _replay_or_conflict(conn, cmd, claim)
    # Priced, and so reserved, in the stock lock order (ADR-002, nexo/stock/lock_order.py).
    wanted = in_lock_order(((normalise_sku(line.sku), line.quantity) for line in cmd.lines), sku=lambda w: w[0])
    context = repo.order_context(conn, cmd.client_id, cmd.warehouse_id, [sku for sku, _ in wanted])
    if context.client is None:
        return Invalid({"client_id": "El cliente elegido no existe."})
    if not context.warehouse_exists:
        return Invalid({"deposit_id": "El depósito elegido no existe."})

    # 2. Prices come from the server's price list only (RN-03).
    priced, problems = _price_lines(wanted, context.products)
    if problems:
        return Rejected(tuple(problems))
    total_cents = sum(line.quantity * line.unit_price_cents for line in priced)

    # 3-4. Credit (RN-01) as one conditional UPDATE, the order, its lines at list price and the key
    #      pointing at it: one statement (fewer round trips while the client's row is locked).
    order_id = uuid.uuid4()
    status, number = repo.record_order(
        conn,
        order_id=order_id,
        request_id=cmd.request_id,
        client_id=cmd.client_id,
        warehouse_id=cmd.warehouse_id,
        salesperson_id=cmd.salesperson_id,
        total_cents=total_cents,
        delivery_method=cmd.delivery_method or None,
        api_key_id=cmd.api_key_id,
        lines=[(line.product_id, line.sku, line.quantity, line.unit_price_cents) for line in priced],
    )
    approved = status == OrderStatus.CONFIRMADO

    # 5. Reserve in the stock lock order (ADR-002), every line in one statement, so the salesperson sees every
    #    short line at once; the rollback undoes the reservations that did succeed.
    reserved = stock.reserve_lines(
        conn,
        order_id=order_id,
        warehouse_id=cmd.warehouse_id,
        kind=ReservationKind.FIRME if approved else ReservationKind.BLANDA,
        lines=[(line.product_id, line.quantity) for line in priced],
    )
    problems = [LineProblem(line.sku, INSUFFICIENT_STOCK) for line in priced if line.product_id not in reserved]
    if problems:
        return Rejected(tuple(problems))

    # 6. Only a confirmed order tells the warehouse and the fiscal provider, through the outbox (ADR-004).
    if approved:
        client = context.client
        payload = order_payload(
            order_id=order_id,
            number=number,
            client_id=client["id"],
            client_name=client["name"],
            tier=client["tier"],
            warehouse_id=cmd.warehouse_id,
            total_cents=total_cents,
            lines=[(line.sku, line.quantity, line.unit_price_cents) for line in priced],
        )
        event_ids.extend(add_order_confirmed_events(conn, order_id=order_id, payload=payload, request_id=cmd.correlation_id))
    elif mail:
        # The officers hear of it in this transaction: an order that rolls back mails nobody (nexo/mail/).
        queue_waiting_for_credit(conn, order_id)

    # 7. The integration that posted it hears of it (ADR-022); an order from the form costs nothing here.
    if cmd.api_key_id is not None:
        event = "order.confirmed" if approved else "order.pending_authorization"
        event_ids.extend(webhooks.notify(conn, order_id, event, request_id=cmd.correlation_id))
    return Confirmed(order_id) if approved else PendingAuthorization(order_id)


def _replay_or_conflict(conn: Conn, cmd: CreateOrder, claim: repo.Claim) -> OrderResult:
    # The stored fingerprint is compared in its own version, so a new normalisation never turns an
    # old retry into a false conflict (ADR-006). A version this code cannot compute is a conflict:
    # refusing is safe, replaying something we cannot compare is not.
    if (
        not is_known_version(claim.fingerprint_version)
        or command_fingerprint(cmd, claim.fingerprint_version) != claim.request_hash
    ):
        return Conflict()
    status = None if claim.order_id is None else repo.order_status(conn, claim.order_id)
    if claim.order_id is None or status is None:
        # A committed key always has its order (rejections roll the key back, its foreign key keeps the
        # order); anything else is a bug.
        raise RuntimeError(f"idempotency key {cmd.request_id} is committed without an order")
    return Replayed(claim.order_id, status)


def _price_lines(wanted: list[tuple[str, int]], catalog: dict[str, DictRow]) -> tuple[list[_PricedLine], list[LineProblem]]:
    priced: list[_PricedLine] = []
    problems: list[LineProblem] = []
    for sku, quantity in wanted:
        product = catalog.get(sku)
        if product is None:
            problems.append(LineProblem(sku, INVALID_SKU))
        elif product["price_cents"] is None:
            problems.append(LineProblem(sku, PRICE_SOURCE_UNAVAILABLE))
        else:
            priced.append(_PricedLine(product["product_id"], sku, quantity, product["price_cents"]))
    return priced, problems
