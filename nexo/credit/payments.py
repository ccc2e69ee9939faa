"""A client's account moves both ways (guarantee 19): a payment lowers its exposure once; the limit changes.

A payment is one transaction: the conditional UPDATE of the client's exposure (RN-01's row, so it
serialises with the orders that charge it), the payment row and the audit row. It may not exceed what
the client owes (payment_exceeds_exposure). An accounting system's retried payment — the same
Idempotency-Key and body — is the same payment (ADR-015's rules, for payments). A limit change names its
reason and is audited; whether a payment or a new limit lets a waiting order through is still the
credit officer's decision (CU-02).
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import dataclass
from typing import ClassVar

from nexo import audit
from nexo.db import Conn, Database, OpensTransactions, one_row

log = logging.getLogger(__name__)
MAX_AMOUNT_CENTS = 10**15  # an input sanity bound (ten trillion pesos), not a business rule


@dataclass(frozen=True)
class RecordPayment:
    """A client paid `amount_cents` (reference: the receipt, the transfer)."""

    client_id: uuid.UUID
    amount_cents: int
    reference: str
    actor_id: int
    actor_username: str
    idempotency_key: uuid.UUID | None = None
    api_key_id: int | None = None


@dataclass(frozen=True)
class PaymentRecorded:
    """The payment was kept; the client's exposure after it."""

    payment_id: uuid.UUID
    exposure_cents: int
    outcome: ClassVar[str] = "recorded"


@dataclass(frozen=True)
class PaymentReplayed:
    """The same Idempotency-Key and body again: the payment it made, the exposure lowered once."""

    payment_id: uuid.UUID
    outcome: ClassVar[str] = "replayed"


@dataclass(frozen=True)
class PaymentKeyReused:
    """The Idempotency-Key was used for another payment (idempotency_key_reused); nothing kept."""

    outcome: ClassVar[str] = "key_reused"


@dataclass(frozen=True)
class ExceedsExposure:
    """More than the client owes (payment_exceeds_exposure); nothing kept."""

    exposure_cents: int
    outcome: ClassVar[str] = "exceeds_exposure"


@dataclass(frozen=True)
class ClientNotFound:
    """No such client."""

    client_id: uuid.UUID
    outcome: ClassVar[str] = "not_found"


PaymentResult = PaymentRecorded | PaymentReplayed | PaymentKeyReused | ExceedsExposure | ClientNotFound


def payment_hash(cmd: RecordPayment) -> str:
    """What an Idempotency-Key stands for: this client, amount and reference."""
    body = {"client_id": str(cmd.client_id), "amount_cents": cmd.amount_cents, "reference": cmd.reference.strip()}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def record_payment(db: OpensTransactions, cmd: RecordPayment) -> PaymentResult:
    """Record the payment (see the module docstring)."""
    if not 0 < cmd.amount_cents <= MAX_AMOUNT_CENTS or not cmd.reference.strip():
        raise ValueError("a payment needs an amount from 1 cent and a reference")  # the forms refuse it first
    with db.transaction() as tx:
        result = _record(tx.conn, cmd)
        if isinstance(result, PaymentRecorded):
            tx.commit()
    log.info("payment client=%s actor=%s outcome=%s", cmd.client_id, cmd.actor_username, result.outcome)
    return result


def _record(conn: Conn, cmd: RecordPayment) -> PaymentResult:
    if conn.execute("SELECT 1 FROM client WHERE id = %s", [cmd.client_id]).fetchone() is None:
        return ClientNotFound(cmd.client_id)
    # The payment row first, as ADR-007 claims an order's key: a retry with the same key waits for the
    # first request's row and replays what it kept; if that one was refused, this insert goes through.
    digest = payment_hash(cmd) if cmd.idempotency_key else None
    claimed = conn.execute(
        """
        INSERT INTO payment (id, client_id, amount_cents, reference, created_by, api_key_id, idempotency_key, request_hash)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
        ON CONFLICT (idempotency_key) DO UPDATE SET idempotency_key = EXCLUDED.idempotency_key
        RETURNING (xmax = 0) AS inserted, id, request_hash
        """,
        [uuid.uuid4(), cmd.client_id, cmd.amount_cents, cmd.reference.strip(), cmd.actor_id, cmd.api_key_id,
         cmd.idempotency_key, digest],
    )  # fmt: skip
    claim = one_row(claimed)
    if not claim["inserted"]:
        return PaymentReplayed(claim["id"]) if claim["request_hash"] == digest else PaymentKeyReused()
    # RN-01's row, conditionally, like an order's charge: never below zero, whatever runs beside it.
    paid = conn.execute(
        "UPDATE client SET exposure_cents = exposure_cents - %s WHERE id = %s AND exposure_cents >= %s RETURNING exposure_cents",
        [cmd.amount_cents, cmd.client_id, cmd.amount_cents],
    ).fetchone()
    if paid is None:
        owed = one_row(conn.execute("SELECT exposure_cents FROM client WHERE id = %s", [cmd.client_id]))
        return ExceedsExposure(owed["exposure_cents"])
    audit.append(
        conn,
        actor=cmd.actor_username,
        action="client.payment_recorded",
        object_type="client",
        object_id=cmd.client_id,
        details={
            "payment_id": str(claim["id"]),
            "amount_cents": cmd.amount_cents,
            "reference": cmd.reference.strip(),
            "exposure_after_cents": paid["exposure_cents"],
            "api_key_id": cmd.api_key_id,
        },
    )
    return PaymentRecorded(claim["id"], paid["exposure_cents"])


@dataclass(frozen=True)
class ChangeLimit:
    """Set a client's credit limit; the reason is required and audited."""

    client_id: uuid.UUID
    limit_cents: int
    reason: str
    actor_username: str


def change_limit(db: Database, cmd: ChangeLimit) -> int | None:
    """Set the limit and audit the change (before, after, why); return the previous limit, None when no client."""
    if not 0 <= cmd.limit_cents <= MAX_AMOUNT_CENTS or not cmd.reason.strip():
        raise ValueError("a limit change needs a limit from 0 and a reason")
    with db.transaction() as tx:
        row = tx.execute(
            "UPDATE client c SET credit_limit_cents = %s FROM (SELECT id, credit_limit_cents FROM client WHERE id = %s"
            " FOR NO KEY UPDATE) AS before WHERE c.id = before.id RETURNING before.credit_limit_cents AS previous,"
            " c.exposure_cents",
            [cmd.limit_cents, cmd.client_id],
        ).fetchone()
        if row is None:
            return None
        audit.append(
            tx.conn,
            actor=cmd.actor_username,
            action="client.limit_changed",
            object_type="client",
            object_id=cmd.client_id,
            details={
                "limit_before_cents": row["previous"],
                "limit_after_cents": cmd.limit_cents,
                "exposure_cents": row["exposure_cents"],
                "reason": cmd.reason.strip(),
            },
        )
        tx.commit()
    log.info("limit change client=%s actor=%s", cmd.client_id, cmd.actor_username)
    return row["previous"]
