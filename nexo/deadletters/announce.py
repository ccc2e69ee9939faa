"""Tell the dead-letter admins about dead letters opened since the last pass, by email (README "Email notifications").

Why not in open_dead_letter's transaction: that function is called by the relay with nothing but a
connection, and whether mail is on is a setting (SMTP_URL) the relay does not hand it; nor should every
relay process need it. The dead letter itself is the durable fact, written in the very transaction that
sets FALLIDO (guarantee 11); this pass turns every pending dead letter not yet announced into one email
per admin, in one transaction that also records the announcement (dead_letter_announcement), so each
dead letter is announced once: nothing lost, nothing doubled. A burst of failures (a destination down for
an hour) makes one email listing them, not one email each. Run by the maintenance runner only when
SMTP_URL is set: a Nexo without mail announces nothing and keeps nothing.
"""

from __future__ import annotations

import hashlib

from psycopg.rows import DictRow

from nexo.db import Conn, Database
from nexo.formatting import format_order_number
from nexo.mail.queue import queue_to_permission
from nexo.states import DeadLetterStatus, sql_constant
from nexo.vocabulary import DESTINATION

# Who handles dead letters (ADR-010): the permission behind the dead-letter pages (nexo/deadletters/views.py).
DEAD_LETTER_ADMIN = "dlq.admin"
LISTED = 50  # dead letters named in one email at most; the rest are counted
PASS_LIMIT = 1000
SIGNATURE = "—\nNexo (mensaje automático; no hace falta responderlo)"
# The pending dead letters are read from migration 0003's partial index dead_letter_one_pending_per_event
# (WHERE status = 'pending'), not from the whole history: a constant, as the index spells it (nexo.states.sql_constant).
PENDING = sql_constant(DeadLetterStatus.PENDING)


def announce_new_dead_letters(db: Database) -> int:
    """Queue one email to each dead-letter admin about the pending dead letters not announced yet; return how many."""
    with db.transaction() as tx:
        fresh = _claim_unannounced(tx.conn)
        if fresh:
            subject, body = _text(fresh)
            ids = ",".join(str(row["id"]) for row in fresh)
            key = "dead-letters:" + hashlib.sha256(ids.encode()).hexdigest()[:32]
            queue_to_permission(tx.conn, key=key, permission=DEAD_LETTER_ADMIN, subject=subject, body=body)
        tx.commit()
    return len(fresh)


def _claim_unannounced(conn: Conn) -> list[DictRow]:
    # The announcement row is the claim: a concurrent pass (a maintenance lease changing hands) waits on
    # the same primary key and inserts nothing, so no dead letter is announced twice.
    return conn.execute(
        f"""
        WITH fresh AS (
            INSERT INTO dead_letter_announcement (dead_letter_id)
            SELECT d.id FROM dead_letter d
             WHERE d.status = {PENDING}
               AND NOT EXISTS (SELECT 1 FROM dead_letter_announcement a WHERE a.dead_letter_id = d.id)
             ORDER BY d.id
             LIMIT %s
            ON CONFLICT DO NOTHING
            RETURNING dead_letter_id
        )
        SELECT d.id, d.destination, d.attempts, o.number, c.name AS client_name
          FROM fresh JOIN dead_letter d ON d.id = fresh.dead_letter_id
          JOIN outbox_event e ON e.id = d.event_id AND e.settled_on = d.event_settled_on
          LEFT JOIN orders o ON o.id = e.aggregate_id
          LEFT JOIN client c ON c.id = o.client_id
         ORDER BY d.id
        """,
        [PASS_LIMIT],
    ).fetchall()


def _text(rows: list[DictRow]) -> tuple[str, str]:
    """Subject and body in words: which order did not reach where, and where to decide what to do."""
    if len(rows) == 1:
        row = rows[0]
        about = f": pedido {format_order_number(row['number'])}" if row["number"] is not None else ""
        subject = f"Un envío falló y espera una decisión{about}"
        opening = "Un envío a un sistema externo falló después de todos sus intentos y espera que alguien decida qué hacer:"
    else:
        subject = f"{len(rows)} envíos fallaron y esperan una decisión"
        opening = (
            f"{len(rows)} envíos a sistemas externos fallaron después de todos sus intentos y esperan que alguien "
            "decida qué hacer:"
        )
    lines = [
        # An event about something other than an order (none today) is named by its destination alone.
        (f"- Pedido {format_order_number(row['number'])}" if row["number"] is not None else "- Un aviso")
        + (f" de {row['client_name']}" if row["client_name"] else "")
        + f" a {DESTINATION.get(row['destination'], row['destination'])}: {row['attempts']} intentos."
        for row in rows[:LISTED]
    ]
    if len(rows) > LISTED:
        lines.append(f"- y {len(rows) - LISTED} más.")
    body = (
        "Hola:\n\n" + opening + "\n\n" + "\n".join(lines) + "\n\n"
        "Podés ver cada uno, reintentarlo o descartarlo en Nexo, en «Entregas fallidas».\n\n" + SIGNATURE
    )
    return subject, body
