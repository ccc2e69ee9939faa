"""A person's email address, where Nexo's notifications reach them (README "Email notifications").

Set by the owner on the users page or with `flask users set-email`; one transaction with its trail row.
An empty address removes it: that person then gets no email.
"""

from __future__ import annotations

import re

from nexo.auth import trail
from nexo.auth.accounts import Done, Invalid, NotFound, Result
from nexo.db import Database

# The same shape the database's CHECK allows (migrations/0610): something@domain.tld, no spaces.
_ADDRESS = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
MAX_LENGTH = 254  # RFC 5321's limit on a path


def problem(address: str) -> str | None:
    """Why `address` cannot be stored, in Spanish; None when it can (an empty one removes the address)."""
    if not address:
        return None
    if len(address) > MAX_LENGTH or not _ADDRESS.fullmatch(address) or not address.isprintable():
        return "Escribí un correo como nombre@empresa.com.ar."
    return None


def set_email(db: Database, *, actor: str, username: str, address: str) -> Result:
    """Store (or, when empty, remove) the user's email address, with its trail row."""
    address = address.strip()
    if (reason := problem(address)) is not None:
        return Invalid({"email": reason})
    with db.transaction() as tx:
        row = tx.execute(
            "UPDATE app_user SET email = %s WHERE username = %s RETURNING id", [address or None, username.strip().lower()]
        ).fetchone()
        if row is None:
            return NotFound()
        # The address itself stays out of the trail: it says who changed whose, not where mail goes.
        trail.record(tx.conn, trail.EMAIL_CHANGED, actor=actor, user_id=row["id"], details={"removed": not address})
        tx.commit()
    return Done()
