"""Webhooks for integrations (ADR-022): which subscriptions hear of an order's event, the notice each one
gets, and how it is signed.

A notice is an outbox event (type `webhook.notice`, destination `webhook`) written in the transaction
of the decision it tells about, so it has every guarantee of an invoice or a handoff: lease, backoff,
Idempotency-Key = its id, FALLIDO and a dead letter an admin can replay. A subscription hears only of
the orders its own API key posted. Its notices about one order go out in order: each depends on the
one before it (the relay's `depends_on`, ADR-017) and carries a `sequence`; a notice that failed into a
dead letter does not hold the next ones back, so a replay can arrive after a later notice — the
`sequence` tells the receiver which is newer.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import uuid
from urllib.parse import urlsplit

from psycopg.types.json import Jsonb

from nexo.db import Conn
from nexo.formatting import format_order_number
from nexo.outbox.partitions import LIVE_EVENTS, settled_since

NOTICE = "webhook.notice"  # outbox_event.event_type of every notice
DESTINATION = "webhook"
# What a subscription may ask for (migration 0600 lists them too).
EVENTS = (
    "order.confirmed",
    "order.pending_authorization",
    "order.approved",
    "order.rejected",
    "order.cancelled",
    "order.dispatched",
    "order.invoiced",
)
SIGNATURE_HEADER = "X-Nexo-Signature"
MAX_URL = 2000
SECRET_BYTES = 32  # 256 bits, like an API key


def new_secret() -> str:
    """A subscription's signing secret: shown once, kept to sign (migration 0600)."""
    return "whsec_" + secrets.token_urlsafe(SECRET_BYTES)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The X-Nexo-Signature value: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body>` (Stripe's scheme:
    the timestamp is signed too, so a receiver can refuse an old notice replayed by someone who copied it)."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def url_problem(url: str, *, production: bool) -> str | None:
    """Why a subscription URL is refused, in a sentence; None when it is acceptable.

    In production only https to a public address (no SSRF into the distributor's own network): a host
    written as a private, loopback or link-local address is refused here, and a name that resolves to one
    is refused when the relay connects (http_client.py checks the address it is about to use).
    """
    if len(url) > MAX_URL:
        return f"The URL is longer than {MAX_URL} characters."
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "The URL does not parse."
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return "The URL must be an absolute http(s) URL."
    if parts.username or parts.password:
        return "The URL must not carry credentials; the signature authenticates Nexo."
    if port == 0:
        return "The URL's port must be between 1 and 65535."
    if not production:
        return None
    if parts.scheme != "https":
        return "In production a webhook URL must use https."
    if not public_host(parts.hostname):
        return "In production a webhook URL must point at a public address, not a private, loopback or local one."
    return None


def public_host(host: str) -> bool:
    """False for an address literal that is not globally routable, or a name that obviously is local."""
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith((".localhost", ".local", ".internal")):
        return False
    try:
        return ipaddress.ip_address(name).is_global
    except ValueError:
        return True  # a name: checked on the address the relay connects to


def notify(conn: Conn, order_id: uuid.UUID, event: str, *, request_id: str | None = None) -> list[uuid.UUID]:
    """In the caller's transaction, after it locked or wrote the order's row: one notice per live subscription
    of the API key that posted the order that asked for `event`; return their ids (for the wake-up).

    An order entered through the form, or whose key has no subscription, costs one indexed read.
    """
    return notify_many(conn, [order_id], event, request_id=request_id)


def notify_many(conn: Conn, order_ids: list[uuid.UUID], event: str, *, request_id: str | None = None) -> list[uuid.UUID]:
    """notify() for several orders that had the same event (a relay batch's invoices), in one read."""
    if event not in EVENTS:
        raise ValueError(f"unknown webhook event {event!r}")
    if not order_ids:
        return []
    rows = conn.execute(
        """
        SELECT s.id AS subscription_id,
               o.id, o.number, o.status, o.billing_status, o.client_id, o.total_cents, o.created_at,
               o.invoice_number, o.credit_note_number, o.handoff_ticket, now() AS occurred_at
          FROM orders o
          JOIN api_key k ON k.id = o.api_key_id AND k.revoked_at IS NULL
          JOIN webhook_subscription s ON s.api_key_id = k.id AND s.revoked_at IS NULL AND %(event)s = ANY(s.events)
         WHERE o.id = ANY(%(order_ids)b::uuid[]) AND o.api_key_id IS NOT NULL
         ORDER BY o.id, s.id
        """,
        {"order_ids": list(order_ids), "event": event},
    ).fetchall()
    if not rows:
        return []
    previous = _previous_notices(conn, rows)
    ids = []
    for row in rows:
        notice_id = uuid.uuid4()
        before = previous.get((row["subscription_id"], row["id"]))
        order = {**row, "sequence": 1 if before is None else before["sequence"] + 1}
        conn.execute(
            f"INSERT INTO {LIVE_EVENTS} (id, aggregate_id, event_type, destination, payload, request_id, depends_on,"
            " subscription_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            [
                notice_id,
                order["id"],
                NOTICE,
                DESTINATION,
                Jsonb(_notice(notice_id, event, order)),
                request_id,
                None if before is None else before["id"],
                order["subscription_id"],
            ],
        )
        ids.append(notice_id)
    return ids


def _previous_notices(conn: Conn, rows: list) -> dict[tuple[int, uuid.UUID], dict]:
    """The newest notice each (subscription, order) already has, by that pair: the next one's sequence follows
    it and depends on it.

    A statement of its own, run only for orders with a subscription: it reads the outbox from the oldest
    order's day on (partitions.settled_since), so Postgres plans those months only. In the statement above,
    every cancel, dispatch and credit decision of an order from the form, and every relay batch of invoices,
    would have had it planned over every month of history (ADR-019).
    """
    found = conn.execute(
        """
        SELECT DISTINCT ON (e.subscription_id, e.aggregate_id)
               e.subscription_id, e.aggregate_id, e.id, (e.payload->>'sequence')::int AS sequence
          FROM outbox_event e
         WHERE e.settled_on >= %(since)s
           AND e.aggregate_id = ANY(%(order_ids)b::uuid[]) AND e.subscription_id = ANY(%(subscriptions)b::bigint[])
         ORDER BY e.subscription_id, e.aggregate_id, (e.payload->>'sequence')::int DESC
        """,
        {
            "since": settled_since(min(row["created_at"] for row in rows)),
            "order_ids": sorted({row["id"] for row in rows}),
            "subscriptions": sorted({row["subscription_id"] for row in rows}),
        },
    ).fetchall()
    return {(r["subscription_id"], r["aggregate_id"]): r for r in found}


def _notice(notice_id: uuid.UUID, event: str, row: dict) -> dict:
    # The order as it stands after the decision, with the API's field names (CONTRACT.md, "Orders API").
    return {
        "id": str(notice_id),
        "type": event,
        "occurred_at": row["occurred_at"].isoformat(),  # the decision's transaction time
        "sequence": row["sequence"],  # per order and subscription: 1, 2, 3 … (the receiver orders by it)
        "order": {
            "id": str(row["id"]),
            "number": format_order_number(row["number"]),
            "status": row["status"],
            "billing_status": row["billing_status"],
            "client_id": str(row["client_id"]),
            "total_cents": row["total_cents"],
            "created_at": row["created_at"].isoformat(),
            "invoice_number": row["invoice_number"],
            "credit_note_number": row["credit_note_number"],
            "handoff_ticket": row["handoff_ticket"],
        },
    }
