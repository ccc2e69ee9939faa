"""Postgres access: one connection pool per process and a transaction that rolls back unless committed."""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Protocol
from uuid import UUID

import psycopg
from psycopg.abc import Params
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from nexo import request_timing

log = logging.getLogger(__name__)

# A connection of our pools: every row comes back as a dict (dict_row). The `conn` of every query function.
Conn = psycopg.Connection[DictRow]


def one_row(cursor: psycopg.Cursor[DictRow]) -> DictRow:
    """The row of a statement that always returns one (count(*), an aggregate, INSERT … RETURNING, a row we hold).

    fetchone() is typed "a row or None"; here None would be a bug, so it raises instead of passing a None on.
    """
    row = cursor.fetchone()
    if row is None:
        raise LookupError("the statement returned no row")
    return row


def array_literal(values: Iterable[str | int | UUID | None]) -> str:
    """Values as a Postgres array in its text form, for a parameter the statement casts (`%s::uuid[]`).

    psycopg adapts a Python list in Python, element by element, after scanning it to choose the element
    type: about 15 µs an array, and an order's transaction passes eleven, over a quarter of create_order's
    Python instructions (docs/performance.md, "Arrays as text"). This is the documented array input syntax
    instead: each value double-quoted with its backslashes and double quotes escaped (any text, commas and
    braces included, reads back as it was), None as an unquoted NULL. The statement's cast gives the
    elements their type. Values are str (a StrEnum's is its value), int or UUID.
    """
    return "{" + ",".join("NULL" if v is None else _quoted_element(str(v)) for v in values) + "}"


def _quoted_element(text: str) -> str:
    """One element of array_literal, double-quoted: inside the quotes only a backslash and a double quote
    need a backslash before them."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# What "the database is down" looks like to callers: the error handlers turn these into a 503 page. A
# server that refuses writes is down for Nexo too: during a failover, PgBouncer can be pointed at the
# standby a moment before its promotion ends (ADR-019), and every request, a page's session touch
# included, writes.
DatabaseUnavailable = (psycopg.OperationalError, psycopg.errors.ReadOnlySqlTransaction, PoolTimeout)


class Transaction:
    """An open transaction on one connection. Nothing is kept unless commit() is called."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.committed = False

    def execute(self, sql: str, params: Params | None = None) -> psycopg.Cursor[DictRow]:
        """Run one statement inside the transaction."""
        return self.conn.execute(sql, params)

    def commit(self) -> None:
        """Make the transaction's effects permanent."""
        self.conn.commit()
        self.committed = True


class OpensTransactions(Protocol):
    """What a use case that only opens transactions needs of its database (create_order, cancel_order,
    dispatch_order, record_payment): a Database, or the API's wrapper that bounds its lock waits."""

    def transaction(self) -> AbstractContextManager[Transaction]:
        """Yield a Transaction that rolls back unless committed."""
        ...


class Database:
    """A lazily opened pool, re-created in a forked child (gunicorn workers, RQ work horses)."""

    def __init__(
        self,
        url: str,
        *,
        max_size: int = 10,
        timeout_s: float = 5.0,
        name: str = "nexo",
        configure: Callable[[Conn], None] | None = None,
        connect_kwargs: dict | None = None,
    ):
        self.url = url
        # prepare_threshold, keepalives, tcp_user_timeout (DatabaseTuning.connect_kwargs, ADR-019)
        self.connect_kwargs = dict(connect_kwargs or {})
        self.max_size = max_size
        self.timeout_s = timeout_s
        self.name = name
        self.configure = configure  # run on every new connection (the web app's input guard)
        self._pool: ConnectionPool[Conn] | None = None
        self._pid: int | None = None
        self._lock = threading.Lock()

    @property
    def pool(self) -> ConnectionPool[Conn]:
        """The pool of this process; a pool inherited through fork() is never used."""
        if self._pool is None or self._pid != os.getpid():
            with self._lock:
                if self._pool is None or self._pid != os.getpid():
                    # check: a pooled connection broken by a database restart is found and replaced
                    # before anyone uses it, instead of failing a request (check_lent_connection).
                    self._pool = ConnectionPool(
                        self.url,
                        min_size=1,
                        max_size=self.max_size,
                        timeout=self.timeout_s,
                        check=check_lent_connection,
                        configure=self.configure,
                        kwargs={
                            **self.connect_kwargs,
                            "row_factory": dict_row,
                            "connect_timeout": max(1, int(self.timeout_s)),
                        },
                        name=f"{self.name}-{os.getpid()}",
                        open=False,
                    )
                    self._pool.open(wait=False)
                    self._pid = os.getpid()
        return self._pool

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Yield a Transaction; it rolls back on exit unless commit() was called."""
        asked = time.perf_counter()
        with self.pool.connection() as conn:
            lent = time.perf_counter()
            request_timing.add("pool", lent - asked)
            tx = Transaction(conn)
            try:
                yield tx
            except psycopg.errors.ReadOnlySqlTransaction:
                _discard(conn)
                raise
            finally:
                if not tx.committed:
                    _roll_back(conn)
                request_timing.add("tx", time.perf_counter() - lent)

    @contextmanager
    def reading(self) -> Iterator[Conn]:
        """Yield a connection for read-only queries; whatever it did is rolled back."""
        with self.transaction() as tx:
            yield tx.conn

    @contextmanager
    def reading_one(self) -> Iterator[Conn]:
        """Yield a connection in autocommit for ONE read statement: no BEGIN and ROLLBACK round trips.

        For reads that need no snapshot shared with another statement (the user each request loads: its
        BEGIN and ROLLBACK were two of a simple page's few round trips, ADR-011).
        """
        asked = time.perf_counter()
        with self.pool.connection() as conn:
            lent = time.perf_counter()
            request_timing.add("pool", lent - asked)
            conn.autocommit = True
            try:
                yield conn
            except psycopg.errors.ReadOnlySqlTransaction:
                _discard(conn)
                raise
            finally:
                # A broken connection refuses the reset; the pool discards it anyway.
                with suppress(psycopg.Error):
                    conn.autocommit = False
                request_timing.add("tx", time.perf_counter() - lent)

    def close(self) -> None:
        """Close this process's pool (tests and shutdown)."""
        if self._pool is not None and self._pid == os.getpid():
            self._pool.close()
        self._pool = None


def check_lent_connection(conn: Conn) -> None:
    """Raise if a pooled connection is broken; a round trip only when its socket says it may be.

    An idle connection has nothing to read. A restart (or pg_terminate_backend) leaves the server's
    termination message and the end of the stream on its socket, so it turns readable; then, and only
    then, the pool's own check runs (an empty query). Checking every connection that way cost a round
    trip per transaction, a visible share of a relay worker's time (ADR-008).
    A NOTIFY or a parameter status also makes the socket readable: that only costs the full check.
    """
    if not conn.closed:
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN | select.POLLPRI)
        if not poller.poll(0) and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            return
    ConnectionPool.check_connection(conn)


def _discard(conn: Conn) -> None:
    """Close a connection whose server refused a write, so the pool opens a new one instead of lending it.

    Straight to the nodes, libpq's `target_session_attrs=read-write` then finds the one that takes writes
    now; through PgBouncer, the pooler's own server connection is not ours to close (ADR-019).
    """
    log.warning("the database refused a write (read-only: a failover under way?); connection discarded")
    conn.close()


def _roll_back(conn: Conn) -> None:
    """Roll back, never raising: a rollback that fails must not hide the error that led to it.

    It fails when the connection was lost (a database restart). The server has then already dropped
    the transaction, which was never committed, so nothing is kept; the pool discards the broken
    connection when it comes back.
    """
    if conn.closed:
        return
    try:
        conn.rollback()
    except psycopg.Error as exc:
        log.warning("rollback failed, connection discarded: %s", type(exc).__name__)


def contains_pattern(text: str) -> str:
    """An ILIKE pattern matching `text` anywhere, its own %, _ and \\ taken literally."""
    return "%" + text.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_") + "%"
