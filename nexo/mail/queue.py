"""Queue an email in the caller's transaction: one row per recipient, never the same notification twice.

Each function is one statement and never commits; the use case that calls it owns the transaction (the
email is part of the decision: both or neither). `key` names the notification (e.g. `credit-waiting:<order
id>`); the row's dedupe_key adds the recipient, and a key already queued is left alone (ON CONFLICT DO
NOTHING), so a replayed request or a second pass queues nothing new.
"""

from __future__ import annotations

from nexo.db import Conn

# Active people with an address. Permissions come through roles (migrations/0001).
_HOLDERS = """
SELECT u.id, u.email FROM app_user u
 WHERE u.active AND u.email IS NOT NULL
   AND EXISTS (SELECT 1 FROM user_role ur JOIN role_permission rp ON rp.role_name = ur.role_name
                WHERE ur.user_id = u.id AND rp.permission_name = %(permission)s)
"""


def queue_to_permission(conn: Conn, *, key: str, permission: str, subject: str, body: str) -> int:
    """Queue one email to every active user holding `permission` and having an address; return how many rows."""
    return conn.execute(
        f"""
        INSERT INTO email_message (dedupe_key, user_id, recipient, subject, body)
        SELECT %(key)s || ':user:' || h.id, h.id, h.email, %(subject)s, %(body)s FROM ({_HOLDERS}) h
        ON CONFLICT (dedupe_key) DO NOTHING
        """,
        {"key": key, "permission": permission, "subject": subject, "body": body},
    ).rowcount


def queue_to_user(conn: Conn, *, key: str, user_id: int, subject: str, body: str) -> int:
    """Queue one email to one user, if active and with an address; return 1 when queued, else 0."""
    return conn.execute(
        """
        INSERT INTO email_message (dedupe_key, user_id, recipient, subject, body)
        SELECT %(key)s || ':user:' || u.id, u.id, u.email, %(subject)s, %(body)s FROM app_user u
         WHERE u.id = %(user_id)s AND u.active AND u.email IS NOT NULL
        ON CONFLICT (dedupe_key) DO NOTHING
        """,
        {"key": key, "user_id": user_id, "subject": subject, "body": body},
    ).rowcount


def full_names(conn: Conn, user_ids: list[int]) -> dict[int, str]:
    """The names people know each other by, for an email's text."""
    rows = conn.execute("SELECT id, full_name FROM app_user WHERE id = ANY(%s)", [user_ids]).fetchall()
    return {row["id"]: row["full_name"] for row in rows}
