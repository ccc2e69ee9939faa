"""SQL for process_event (migration 0060). Functions take an open connection; the caller owns the transaction."""

from __future__ import annotations

from nexo.db import Conn

# Kinds that mean "this program died and was (or is being) started again".
RESTART_KINDS = ("exited", "backoff", "worker_exited")
# A program's state is the kind of its latest supervisor event.
STATES = {"running": "RUNNING", "exited": "RESTARTING", "backoff": "BACKOFF", "fatal": "FATAL", "revived": "RESTARTING"}
KEEP_DAYS = 30


def insert_event(conn: Conn, host: str, program: str, kind: str, pid: int | None = None, detail: str = "") -> None:
    """Record one process event now."""
    conn.execute(
        "INSERT INTO process_event (host, program, kind, pid, detail) VALUES (%s, %s, %s, %s, %s)",
        [host, program, kind, pid, detail[:500]],
    )


def purge_old_events(conn: Conn, keep_days: int = KEEP_DAYS) -> int:
    """Delete events older than keep_days, except each program's latest (its current state); return how many."""
    return conn.execute(
        """
        DELETE FROM process_event e
         WHERE e.occurred_at < now() - %s * interval '1 day'
           AND e.id <> (SELECT max(l.id) FROM process_event l
                         WHERE l.host = e.host AND l.program = e.program)""",
        [keep_days],
    ).rowcount


def mark_host_seen(conn: Conn, host: str) -> None:
    """This host is alive now (its supervisor's event listener, on its ticks)."""
    conn.execute(
        "INSERT INTO host_seen (host) VALUES (%s) ON CONFLICT (host) DO UPDATE SET seen_at = now()",
        [host],
    )


# A host is gone once neither a heartbeat nor an event of it is younger than the expiry (NEXO_HOST_EXPIRY_S).
_LAST_SEEN = """greatest((SELECT s.seen_at FROM host_seen s WHERE s.host = e.host),
                             max(e.occurred_at))"""


def purge_gone_hosts(conn: Conn, expiry_s: float) -> int:
    """Delete the rows of hosts not seen for expiry_s (their programs no longer page anyone); return how many."""
    gone = [
        r["host"]
        for r in conn.execute(
            f"SELECT e.host FROM process_event e GROUP BY e.host HAVING {_LAST_SEEN} < now() - make_interval(secs => %s)"
            " UNION SELECT host FROM host_seen WHERE seen_at < now() - make_interval(secs => %s)"
            "   AND NOT EXISTS (SELECT 1 FROM process_event e WHERE e.host = host_seen.host"
            "                     AND e.occurred_at >= now() - make_interval(secs => %s))",
            [expiry_s, expiry_s, expiry_s],
        ).fetchall()
    ]
    if not gone:
        return 0
    deleted = conn.execute("DELETE FROM process_event WHERE host = ANY(%s)", [gone]).rowcount
    conn.execute("DELETE FROM host_seen WHERE host = ANY(%s)", [gone])
    return deleted


def programs(conn: Conn, host_expiry_s: float | None = None) -> list[dict]:
    """Per host and program (only hosts seen within host_expiry_s, when given): restarts in 24 h, the last
    restart, the state supervisor last reported."""
    rows = conn.execute(
        """
        SELECT host, program,
               count(*) FILTER (WHERE kind = ANY(%(restarts)s)
                                  AND occurred_at > now() - interval '24 hours') AS restarts_24h,
               max(occurred_at) FILTER (WHERE kind = ANY(%(restarts)s)) AS last_restart_at,
               (array_agg(kind ORDER BY id DESC) FILTER (WHERE kind <> 'worker_exited'))[1] AS last_kind,
               (array_agg(pid ORDER BY id DESC) FILTER (WHERE kind = 'running'))[1] AS pid
          FROM process_event
         WHERE %(expiry_s)s::float8 IS NULL
            OR host IN (SELECT e.host FROM process_event e GROUP BY e.host
                         HAVING {last_seen} >= now() - make_interval(secs => %(expiry_s)s::float8))
         GROUP BY host, program
         ORDER BY host, program""".replace("{last_seen}", _LAST_SEEN),
        {"restarts": list(RESTART_KINDS), "expiry_s": host_expiry_s},
    ).fetchall()
    return [{**row, "state": STATES.get(row["last_kind"])} for row in rows]
