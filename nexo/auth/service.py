"""Users, their permissions and password checks."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from flask_login import UserMixin
from werkzeug.security import check_password_hash, generate_password_hash

from nexo.db import Conn, one_row


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    # Checked against when the username is unknown, so a wrong username costs as long as a wrong password.
    return generate_password_hash("nexo-no-such-user")


@dataclass(frozen=True)
class User(UserMixin):
    """The logged-in person, with the permissions of all their roles."""

    id: int
    username: str
    full_name: str
    permissions: frozenset[str]
    session_id: int | None = None  # the server-side session this request runs in (ADR-018); None for API keys
    must_change_password: bool = False  # a one-time password: no page but the password change until changed
    mfa_enrolled: bool = False

    def get_id(self) -> str:
        return str(self.id)

    def can(self, permission: str) -> bool:
        """True when one of the user's roles grants the permission."""
        return permission in self.permissions


_USER_SQL = """
    SELECT u.id, u.username, u.full_name, u.password_hash, u.must_change_password,
           u.totp_enrolled_at IS NOT NULL AS mfa_enrolled,
           coalesce(array_agg(DISTINCT rp.permission_name)
                    FILTER (WHERE rp.permission_name IS NOT NULL), '{}') AS permissions
      FROM app_user u
      LEFT JOIN user_role ur ON ur.user_id = u.id
      LEFT JOIN role_permission rp ON rp.role_name = ur.role_name
     WHERE {where} AND u.active
     GROUP BY u.id"""


def _to_user(row) -> User:
    return User(
        row["id"],
        row["username"],
        row["full_name"],
        frozenset(row["permissions"]),
        must_change_password=row["must_change_password"],
        mfa_enrolled=row["mfa_enrolled"],
    )


def load_user(conn: Conn, user_id: int) -> User | None:
    """The active user with this id, or None."""
    row = conn.execute(_USER_SQL.replace("{where}", "u.id = %s"), [user_id]).fetchone()
    return _to_user(row) if row else None


def authenticate(conn: Conn, username: str, password: str) -> User | None:
    """The active user whose password matches, or None."""
    row = conn.execute(_USER_SQL.replace("{where}", "u.username = %s"), [username.strip().lower()]).fetchone()
    if row is None:
        check_password_hash(_dummy_hash(), password)
        return None
    return _to_user(row) if check_password_hash(row["password_hash"], password) else None


def create_user(
    conn: Conn, username: str, full_name: str, password_hash: str, roles: list[str], *, must_change_password: bool = False
) -> int:
    """Create a user with the given roles in the caller's transaction; return its id."""
    user_id = one_row(
        conn.execute(
            "INSERT INTO app_user (username, full_name, password_hash, must_change_password)"
            " VALUES (%s, %s, %s, %s) RETURNING id",
            [username.strip().lower(), full_name, password_hash, must_change_password],
        )
    )["id"]
    for role in roles:
        conn.execute("INSERT INTO user_role (user_id, role_name) VALUES (%s, %s)", [user_id, role])
    return user_id
