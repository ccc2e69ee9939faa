"""API keys: create (shown once), revoke, and authenticate a bearer key as its user (ADR-015).

A key is `nexo_` + 256 random bits. Only its SHA-256 is stored: with that much entropy there is nothing
to brute-force, so a slow password hash (scrypt, as for passwords) would add tens of milliseconds of
CPU to every API call and no protection. Looking a key up by its hash also means no comparison of
secrets in Python, so no timing to leak.

A key may carry scopes (ADR-018): a subset of its user's permissions, and then acts with only those
that its user still has; and an expiry, after which it answers 401 like a revoked one. Its first use
leaves a row in the authentication trail.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from psycopg.errors import UniqueViolation

from nexo import audit
from nexo.api import repository as repo
from nexo.auth import trail
from nexo.auth.service import User
from nexo.db import Database

KEY_PREFIX = "nexo_"
# last_used_at is written at most this often per key: a read on every request, a write once a minute.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class ApiKeyError(Exception):
    """A key command that cannot be done (unknown user, name taken, no such key)."""


@dataclass(frozen=True)
class Principal:
    """Who an API request acts as: the key's user, with that user's permissions, and the key."""

    user: User
    key_id: int
    key_name: str


def hash_key(key: str) -> str:
    """The stored form of a key."""
    return hashlib.sha256(key.encode()).hexdigest()


def create_key(
    db: Database, *, name: str, username: str, actor: str, scopes: list[str] | None = None, expires_in_days: int | None = None
) -> str:
    """Create a key named `name` acting as `username` (only with `scopes`, when given; until the expiry, when
    given); audited; return the key (the only time it exists)."""
    name = name.strip()
    if not name:
        raise ApiKeyError("the key needs a name")
    if expires_in_days is not None and expires_in_days < 1:
        raise ApiKeyError("--expires-in-days must be at least 1")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    expires_at = datetime.now(UTC) + timedelta(days=expires_in_days) if expires_in_days else None
    with db.transaction() as tx:
        user_id = repo.user_id_by_username(tx.conn, username)
        if user_id is None:
            raise ApiKeyError(f"no active user {username!r}")
        if scopes is not None:
            beyond = set(scopes) - repo.user_permissions(tx.conn, user_id)
            if beyond or not scopes:
                raise ApiKeyError(
                    f"scopes must be some of {username}'s permissions; not: {', '.join(sorted(beyond)) or '(none given)'}"
                )
        try:
            key_id = repo.insert_key(
                tx.conn,
                name=name,
                user_id=user_id,
                key_sha256=hash_key(key),
                scopes=sorted(set(scopes)) if scopes else None,
                expires_at=expires_at,
            )
        except UniqueViolation:
            raise ApiKeyError(f"a live key named {name!r} already exists; revoke it first") from None
        details = {
            "name": name,
            "user": username.strip().lower(),
            "scopes": scopes,
            "expires_at": expires_at and expires_at.isoformat(),
        }
        audit.append(tx.conn, actor=actor, action="api_key.created", object_type="api_key", object_id=key_id, details=details)
        tx.commit()
    return key


def rotate_key(db: Database, *, name: str, actor: str) -> str:
    """Replace the live key NAME by a new one (same user, scopes and expiry) in one transaction; return it."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    with db.transaction() as tx:
        old = repo.live_key_named(tx.conn, name.strip())
        if old is None:
            raise ApiKeyError(f"no live key named {name!r}")
        repo.revoke_key(tx.conn, old["id"])
        key_id = repo.insert_key(
            tx.conn,
            name=old["name"],
            user_id=old["user_id"],
            key_sha256=hash_key(key),
            scopes=old["scopes"],
            expires_at=old["expires_at"],
        )
        audit.append(
            tx.conn,
            actor=actor,
            action="api_key.rotated",
            object_type="api_key",
            object_id=key_id,
            details={"name": old["name"], "replaces": old["id"]},
        )
        tx.commit()
    return key


def revoke_key(db: Database, *, name: str, actor: str) -> int:
    """Revoke the live key named `name` at once; audited; return its id."""
    with db.transaction() as tx:
        key = repo.live_key_named(tx.conn, name.strip())
        if key is None:
            raise ApiKeyError(f"no live key named {name!r}")
        repo.revoke_key(tx.conn, key["id"])
        audit.append(
            tx.conn,
            actor=actor,
            action="api_key.revoked",
            object_type="api_key",
            object_id=key["id"],
            details={"name": key["name"]},
        )
        tx.commit()
    return key["id"]


def authenticate(db: Database, presented: str) -> Principal | None:
    """The principal of a live key, or None for an unknown or revoked one."""
    if not presented.startswith(KEY_PREFIX) or len(presented) > 100:
        return None
    # One autocommit read on every request, like the session's user load (nexo/db.py reading_one).
    with db.reading_one() as conn:
        row = repo.key_with_user(conn, hash_key(presented))
    if row is None:
        return None
    if row["last_used_at"] is None:
        with db.transaction() as tx:
            if repo.first_use(tx.conn, row["key_id"]):  # one request wins, however many arrive at once
                details = {"key_id": row["key_id"], "key_name": row["key_name"]}
                actor = f"api_key:{row['key_name']}"
                trail.record(tx.conn, trail.API_KEY_FIRST_USED, actor=actor, user_id=row["id"], details=details)
            tx.commit()
    elif row["now"] - row["last_used_at"] >= LAST_USED_RESOLUTION:
        with db.transaction() as tx:
            repo.touch_key(tx.conn, row["key_id"])
            tx.commit()
    permissions = frozenset(row["permissions"])
    if row["scopes"] is not None:
        permissions &= frozenset(row["scopes"])  # a scoped key: only what both the scopes and the user allow
    user = User(row["id"], row["username"], row["full_name"], permissions)
    return Principal(user, row["key_id"], row["key_name"])
