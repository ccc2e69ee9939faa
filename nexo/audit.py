"""Append rows to the audit log (guarantee 12). Callers pass their open transaction."""

from __future__ import annotations

from psycopg.types.json import Jsonb

from nexo.db import Conn, one_row

SYSTEM_ACTOR = "system"


def append(conn: Conn, *, actor: str, action: str, object_type: str, object_id, details: dict | None = None) -> int:
    """Write one audit row in the caller's transaction and return its id."""
    inserted = conn.execute(
        "INSERT INTO audit_log (actor, action, object_type, object_id, details) VALUES (%s, %s, %s, %s, %s) RETURNING id",
        [actor, action, object_type, str(object_id), Jsonb(details or {})],
    )
    return one_row(inserted)["id"]
