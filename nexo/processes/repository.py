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


def programs(conn: Conn) -> list[dict]:
    """Per host and program: restarts in the last 24 h, the last restart, and the state supervisor last reported."""
    rows = conn.execute(
        """
        SELECT host, program,
               count(*) FILTER (WHERE kind = ANY(%(restarts)s)
                                  AND occurred_at > now() - interval '24 hours') AS restarts_24h,
               max(occurred_at) FILTER (WHERE kind = ANY(%(restarts)s)) AS last_restart_at,
               (array_agg(kind ORDER BY id DESC) FILTER (WHERE kind <> 'worker_exited'))[1] AS last_kind,
               (array_agg(pid ORDER BY id DESC) FILTER (WHERE kind = 'running'))[1] AS pid
          FROM process_event
         GROUP BY host, program
         ORDER BY host, program""",
        {"restarts": list(RESTART_KINDS)},
    ).fetchall()
    return [{**row, "state": STATES.get(row["last_kind"])} for row in rows]
