"""Server-side sessions (ADR-018): the database says whether a session is live, the cookie only names it.

The signed cookie carries a random session id (256 bits); user_session keeps its SHA-256. Each request
loads the user and validates the session in ONE statement (load_session_user): it refuses an ended,
idle or too old session, ends it on the spot when a limit was passed, and refreshes last_seen_at at
most once per SecuritySettings.session_touch_s, so a page costs no write most of the time.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from nexo.auth.service import User
from nexo.db import Conn


def new_token() -> str:
    """A fresh session id for the cookie (shown to nobody else, stored only hashed)."""
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """The stored form of a session id."""
    return hashlib.sha256(token.encode()).hexdigest()


def start(conn: Conn, user_id: int, token: str, *, client_addr: str, user_agent: str) -> int:
    """Record a new session of this user in the caller's transaction; return its id."""
    row = conn.execute(
        "INSERT INTO user_session (token_sha256, user_id, client_addr, user_agent) VALUES (%s, %s, %s, %s) RETURNING id",
        [token_hash(token), user_id, client_addr, user_agent[:300]],
    ).fetchone()
    assert row is not None
    return row["id"]


# One statement per request: find the live session, end it if it went idle or too old, touch it when its
# last_seen_at is stale, and return its user with every permission of their roles (or nothing).
_LOAD_SQL = """
WITH s AS (
    SELECT id, user_id, last_seen_at,
           last_seen_at <= now() - make_interval(secs => %(idle_s)s) AS idle,
           created_at <= now() - make_interval(secs => %(max_s)s) AS too_old
      FROM user_session
     WHERE token_sha256 = %(token)s AND ended_at IS NULL
), changed AS (
    UPDATE user_session us
       SET last_seen_at = CASE WHEN s.idle OR s.too_old THEN us.last_seen_at ELSE now() END,
           ended_at = CASE WHEN s.idle OR s.too_old THEN now() END,
           end_reason = CASE WHEN s.too_old THEN 'expired' WHEN s.idle THEN 'idle' END
      FROM s
     WHERE us.id = s.id AND (s.idle OR s.too_old OR s.last_seen_at <= now() - make_interval(secs => %(touch_s)s))
)
SELECT u.id, u.username, u.full_name, u.must_change_password, u.totp_enrolled_at IS NOT NULL AS mfa_enrolled,
       s.id AS session_id,
       coalesce(array_agg(DISTINCT rp.permission_name) FILTER (WHERE rp.permission_name IS NOT NULL), '{}') AS permissions
  FROM s
  JOIN app_user u ON u.id = s.user_id AND u.active
  LEFT JOIN user_role ur ON ur.user_id = u.id
  LEFT JOIN role_permission rp ON rp.role_name = ur.role_name
 WHERE NOT s.idle AND NOT s.too_old
 GROUP BY u.id, s.id"""


@dataclass(frozen=True)
class Limits:
    """The idle and absolute limits and the touch resolution, in seconds (SecuritySettings)."""

    idle_s: float
    max_s: float
    touch_s: float


def load_session_user(conn: Conn, token: str, limits: Limits) -> User | None:
    """The user of a live session (touched when stale), or None: unknown, ended, idle, too old, user inactive."""
    row = conn.execute(
        _LOAD_SQL, {"token": token_hash(token), "idle_s": limits.idle_s, "max_s": limits.max_s, "touch_s": limits.touch_s}
    ).fetchone()
    if row is None:
        return None
    return User(
        row["id"],
        row["username"],
        row["full_name"],
        frozenset(row["permissions"]),
        session_id=row["session_id"],
        must_change_password=row["must_change_password"],
        mfa_enrolled=row["mfa_enrolled"],
    )


def end(conn: Conn, session_id: int, reason: str) -> bool:
    """End one live session now; True if it was live."""
    return (
        conn.execute(
            "UPDATE user_session SET ended_at = now(), end_reason = %s WHERE id = %s AND ended_at IS NULL", [reason, session_id]
        ).rowcount
        == 1
    )


def end_all_of_user(conn: Conn, user_id: int, reason: str, *, keep: int | None = None) -> int:
    """End every live session of a user (but `keep`, the caller's own); return how many ended."""
    return conn.execute(
        "UPDATE user_session SET ended_at = now(), end_reason = %s"
        " WHERE user_id = %s AND ended_at IS NULL AND id IS DISTINCT FROM %s",
        [reason, user_id, keep],
    ).rowcount


def live_of_user(conn: Conn, user_id: int, limits: Limits) -> list[dict]:
    """The user's sessions still within their limits, newest first (for the account page)."""
    return conn.execute(
        """
        SELECT id, created_at, last_seen_at, client_addr, user_agent
          FROM user_session
         WHERE user_id = %s AND ended_at IS NULL
           AND last_seen_at > now() - make_interval(secs => %s) AND created_at > now() - make_interval(secs => %s)
         ORDER BY created_at DESC
        """,
        [user_id, limits.idle_s, limits.max_s],
    ).fetchall()


def purge(conn: Conn, *, keep_days: int, limits: Limits) -> int:
    """Delete sessions ended (or past their limits) more than keep_days ago; return how many.

    The audit log keeps the trail of each login and logout; the session rows only say whether a cookie
    still opens something, so old ones have nothing left to say.
    """
    return conn.execute(
        """
        DELETE FROM user_session
         WHERE (ended_at IS NOT NULL AND ended_at < now() - make_interval(days => %(days)s))
            OR (ended_at IS NULL AND least(last_seen_at + make_interval(secs => %(idle_s)s),
                                          created_at + make_interval(secs => %(max_s)s))
                                     < now() - make_interval(days => %(days)s))
        """,
        {"days": keep_days, "idle_s": limits.idle_s, "max_s": limits.max_s},
    ).rowcount
