"""Webhook subscriptions (ADR-022): an API key's URLs and the order events each wants; created, listed and ended.

The API (nexo/api/webhook_views.py) calls these inside its transactions; the notices themselves are
written by nexo/outbox/webhooks.py.
"""

from __future__ import annotations

from psycopg.rows import DictRow

from nexo.db import Conn, one_row
from nexo.outbox import repository
from nexo.outbox.dead_letter import withdraw_pending
from nexo.outbox.partitions import LIVE_EVENTS
from nexo.outbox.webhooks import new_secret
from nexo.states import DeadLetterStatus, EventStatus

MAX_PER_KEY = 10  # a key's live subscriptions: each order event of that key is written once per subscription


def create(conn: Conn, *, api_key_id: int, url: str, events: list[str]) -> DictRow:
    """A new subscription with a fresh secret (the only time the secret is returned)."""
    return one_row(
        conn.execute(
            "INSERT INTO webhook_subscription (api_key_id, url, events, secret) VALUES (%s, %s, %s, %s)"
            " RETURNING id, url, events, secret, created_at",
            [api_key_id, url, events, new_secret()],
        )
    )


def live_count(conn: Conn, api_key_id: int) -> int:
    """How many live subscriptions the key has, its row locked so two creations count one after the other."""
    conn.execute("SELECT id FROM api_key WHERE id = %s FOR UPDATE", [api_key_id])
    return one_row(
        conn.execute("SELECT count(*) AS n FROM webhook_subscription WHERE api_key_id = %s AND revoked_at IS NULL", [api_key_id])
    )["n"]


def of_key(conn: Conn, api_key_id: int) -> list[DictRow]:
    """The key's live subscriptions, oldest first, without their secrets."""
    return conn.execute(
        "SELECT id, url, events, created_at FROM webhook_subscription WHERE api_key_id = %s AND revoked_at IS NULL ORDER BY id",
        [api_key_id],
    ).fetchall()


def end(conn: Conn, subscription_id: int, *, api_key_id: int, actor: str) -> int | None:
    """End one of the key's live subscriptions: revoked, its notices not yet delivered withdrawn (RETIRADO,
    never sent) and their dead letters resolved. None when the key has no such live subscription; otherwise
    how many notices were withdrawn.

    Lock order: its pending dead letters, then its events (a replay takes dead letter, then event).
    """
    ended = conn.execute(
        "UPDATE webhook_subscription SET revoked_at = now() WHERE id = %s AND api_key_id = %s AND revoked_at IS NULL"
        " RETURNING id",
        [subscription_id, api_key_id],
    ).fetchone()
    if ended is None:
        return None
    conn.execute(
        f"SELECT d.id FROM dead_letter d JOIN {LIVE_EVENTS} e ON e.id = d.event_id"  # pending: its event is live
        " WHERE e.subscription_id = %s AND d.status = %s ORDER BY d.id FOR UPDATE OF d",
        [subscription_id, DeadLetterStatus.PENDING],
    )
    ids = [
        row["id"]
        for row in conn.execute(
            f"SELECT id FROM {LIVE_EVENTS} WHERE subscription_id = %s AND status = ANY(%s) ORDER BY id FOR UPDATE",
            [subscription_id, [EventStatus.PENDIENTE, EventStatus.FALLIDO]],
        ).fetchall()
    ]
    withdraw_pending(conn, event_ids=ids, actor=actor, note="retirada: la integración dio de baja su aviso")
    return repository.withdraw(conn, ids)
