"""SQL that writes the telemetry history (tables ops_signal_event and order_transaction_sample).

Only the recorder writes these tables; nexo/ops reads them for /ops and /metrics. The caller owns the
transaction.
"""

from __future__ import annotations

from datetime import datetime

from nexo.db import Conn


def skip_commit_wait(conn: Conn) -> None:
    """Let the current transaction commit without waiting for its WAL flush (telemetry only)."""
    conn.execute("SELECT set_config('synchronous_commit', 'off', true)")


def insert_signal_event(conn: Conn, kind: str) -> None:
    """Record one occurrence of a signal event (e.g. request_id_reused) now."""
    conn.execute("INSERT INTO ops_signal_event (kind) VALUES (%s)", [kind])


def insert_transaction_samples(conn: Conn, samples: list[tuple[datetime, float, str]]) -> None:
    """Store order transaction samples: (occurred_at, seconds, outcome) tuples."""
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO order_transaction_sample (occurred_at, seconds, outcome) VALUES (%s, %s, %s)", samples)


def purge_transaction_samples(conn: Conn, keep_days: int) -> int:
    """Delete samples older than keep_days; return how many went."""
    return conn.execute(
        "DELETE FROM order_transaction_sample WHERE occurred_at < now() - %s * interval '1 day'", [keep_days]
    ).rowcount
