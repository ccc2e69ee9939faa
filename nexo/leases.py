"""Leases: one holder at a time across hosts for a singleton job, by a row with an expiry (ADR-019).

Not a session advisory lock: behind a transaction pooler (PgBouncer) a session's statements reach
different server connections, so such a lock is neither held where it is checked nor released where it
was taken. A lease is one row per job; taking it and renewing it is the same single statement, on the
database's own clock, so hosts whose clocks differ still agree. A holder that cannot renew (its host
gone, the database unreachable) loses the lease when it expires, and another takes it over.

A lease makes a job run once instead of N times; it is not what keeps data right. The jobs it guards
are each safe to run twice at once (batched, idempotent deletes, SKIP LOCKED claims), since a holder cut
off from the database may still be finishing a batch when its lease passes to another.
"""

from __future__ import annotations

import psycopg
from psycopg.rows import DictRow

ACQUIRE_SQL = """
INSERT INTO leader_lease AS l (name, holder, expires_at)
VALUES (%(name)s, %(holder)s, now() + make_interval(secs => %(ttl_s)s))
ON CONFLICT (name) DO UPDATE
   SET holder = EXCLUDED.holder,
       expires_at = EXCLUDED.expires_at,
       acquired_at = CASE WHEN l.holder = EXCLUDED.holder THEN l.acquired_at ELSE now() END
 WHERE l.holder = EXCLUDED.holder OR l.expires_at < now()
RETURNING holder
"""


# A connection of the pools (nexo.db.Conn, spelled here: db is of this module's layer, so not imported).
Conn = psycopg.Connection[DictRow]


def acquire(conn: Conn, name: str, holder: str, ttl_s: float) -> bool:
    """Take or renew the lease `name` for `holder` for ttl_s seconds; False while someone else holds it."""
    return conn.execute(ACQUIRE_SQL, {"name": name, "holder": holder, "ttl_s": ttl_s}).fetchone() is not None


def release(conn: Conn, name: str, holder: str) -> bool:
    """Give the lease up now (a clean stop), so another host need not wait for it to expire."""
    return conn.execute("DELETE FROM leader_lease WHERE name = %s AND holder = %s", [name, holder]).rowcount == 1
