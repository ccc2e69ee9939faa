"""The sender's SQL: claim a due email with a lease, record how its send ended (fenced), count for /ops.

Each function is one statement and never commits; nexo/mail/sender.py owns the transactions, and none of
them is open during an SMTP conversation (ADR-004's rule, applied to email).
"""

from __future__ import annotations

import uuid

from psycopg.rows import DictRow

from nexo.db import Conn, one_row
from nexo.states import EmailStatus, sql_constant

# The due emails are read from migration 0610's partial index email_message_due_idx (WHERE status =
# 'PENDIENTE'): a constant, as the index spells it (nexo.states.sql_constant says why).
PENDIENTE = sql_constant(EmailStatus.PENDIENTE)

# The attempt is counted at the claim, before any network (as the relay does, guarantee 16): a sender
# killed mid-send has still spent it, so a message that keeps killing its sender ends FALLIDO.
CLAIM_SQL = f"""
UPDATE email_message
   SET locked_until = now() + make_interval(secs => %(lease_s)s),
       claim_token = gen_random_uuid(),
       attempts = attempts + 1
 WHERE id = (SELECT id FROM email_message
              WHERE status = {PENDIENTE} AND next_attempt_at <= now()
                AND (locked_until IS NULL OR locked_until < now())
                AND attempts < %(max_attempts)s
              ORDER BY next_attempt_at, id
              LIMIT 1
                FOR UPDATE SKIP LOCKED)
RETURNING id, dedupe_key, recipient, subject, body, attempts, claim_token
"""


def claim_next(conn: Conn, *, lease_s: float, max_attempts: int) -> DictRow | None:
    """Lease the next due email (SKIP LOCKED: senders never wait on each other), or None when none is due."""
    return conn.execute(CLAIM_SQL, {"lease_s": lease_s, "max_attempts": max_attempts}).fetchone()


def mark_sent(conn: Conn, email_id: int, claim_token: uuid.UUID) -> bool:
    """ENVIADO; False when the lease passed to another sender, whose outcome stands."""
    return (
        conn.execute(
            "UPDATE email_message SET status = %s, sent_at = now(), locked_until = NULL, last_error = NULL"
            " WHERE id = %s AND claim_token = %s AND status = %s",
            [EmailStatus.ENVIADO, email_id, claim_token, EmailStatus.PENDIENTE],
        ).rowcount
        == 1
    )


def mark_failed_attempt(conn: Conn, email_id: int, claim_token: uuid.UUID, *, error: str, retry_in_s: float | None) -> bool:
    """Back to PENDIENTE for another try in retry_in_s seconds, or FALLIDO when retry_in_s is None; fenced."""
    return (
        conn.execute(
            """
            UPDATE email_message
               SET status = CASE WHEN %(retry)s::float8 IS NULL THEN %(failed)s ELSE %(pending)s END,
                   next_attempt_at = now() + make_interval(secs => coalesce(%(retry)s::float8, 0)),
                   locked_until = NULL, last_error = left(%(error)s, 500)
             WHERE id = %(id)s AND claim_token = %(token)s AND status = %(pending)s
            """,
            {
                "id": email_id,
                "token": claim_token,
                "error": error,
                "retry": retry_in_s,
                "failed": EmailStatus.FALLIDO,
                "pending": EmailStatus.PENDIENTE,
            },
        ).rowcount
        == 1
    )


def fail_spent(conn: Conn, *, max_attempts: int) -> int:
    """FALLIDO for emails whose every attempt was spent by senders that died before recording an outcome."""
    return conn.execute(
        "UPDATE email_message SET status = %s, locked_until = NULL,"
        " last_error = coalesce(last_error, 'el envío se interrumpió sin registrar su resultado')"
        f" WHERE status = {PENDIENTE} AND attempts >= %s AND (locked_until IS NULL OR locked_until < now())",
        [EmailStatus.FALLIDO, max_attempts],
    ).rowcount


def summary(conn: Conn) -> DictRow:
    """For /ops: waiting, failed for good, sent in the last 24 hours, and the oldest waiting one's created_at."""
    return one_row(
        conn.execute(
            """
            SELECT count(*) FILTER (WHERE status = %(pending)s) AS waiting,
                   count(*) FILTER (WHERE status = %(failed)s) AS failed,
                   count(*) FILTER (WHERE status = %(sent)s AND sent_at > now() - interval '24 hours') AS sent_24h,
                   min(created_at) FILTER (WHERE status = %(pending)s) AS oldest_waiting_at
              FROM email_message
            """,
            {"pending": EmailStatus.PENDIENTE, "failed": EmailStatus.FALLIDO, "sent": EmailStatus.ENVIADO},
        )
    )


def purge_sent(conn: Conn, *, keep_days: int) -> int:
    """Delete emails sent more than keep_days ago (the maintenance housekeeping); failed ones stay for /ops."""
    return conn.execute(
        "DELETE FROM email_message WHERE status = %s AND sent_at < now() - make_interval(days => %s)",
        [EmailStatus.ENVIADO, keep_days],
    ).rowcount
