"""Durable, cross-process history of two signals the business tables cannot give (guarantee 13).

- request_id_reused conflicts (signal 3): the order transaction rolled back, so each conflict is
  written by its own short transaction, at once (they are rare).
- order transaction durations (signal 5): one sample per order, on the hot path of every order. The
  hook only appends to an in-process buffer (a lock and a list append); a daemon thread writes the
  buffer every FLUSH_INTERVAL_S (sooner when FLUSH_AT samples wait) in one multi-row transaction,
  and once more at interpreter exit. A killed process loses at most its last few seconds of samples:
  acceptable for telemetry, never for business data (which this is not).

The recorder has its own two-connection pool, so a flush never waits for (or starves) the
connections the order transactions use. Nothing here raises into the caller: a metric is never a
reason to fail an order (nexo.telemetry.metrics).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections import deque
from datetime import UTC, datetime

from nexo.db import Database
from nexo.telemetry import queries

log = logging.getLogger(__name__)

FLUSH_INTERVAL_S = 2.0
FLUSH_AT = 200
# Bounded memory while the database is unreachable: past this many waiting samples the oldest go.
MAX_BUFFERED = 10_000
# The dashboard shows 24 hours; a week on top leaves room to look back. Telemetry housekeeping,
# not a business retention rule: the maintenance runner purges, once for the fleet (nexo/maintenance.py).
SAMPLE_KEEP_DAYS = 8


class Recorder:
    """One per process: buffers duration samples and writes signal events to Postgres."""

    def __init__(self) -> None:
        self._database: Database | None = None
        self._after_fork()
        os.register_at_fork(after_in_child=self._after_fork)
        atexit.register(self.flush)

    def _after_fork(self) -> None:
        # A forked child starts empty: its parent still owns (and will flush) the samples it buffered,
        # and a lock held by another parent thread at fork time would never be released here.
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._wake = threading.Event()
        self._buffer: deque[tuple[datetime, float, str]] = deque(maxlen=MAX_BUFFERED)
        self._thread: threading.Thread | None = None
        self._failing = False
        self.dropped = 0

    def configure(self, database_url: str, connect_kwargs: dict | None = None) -> None:
        """Write to this database from now on (create_app calls it; the same URL again is a no-op)."""
        with self._lock:
            if self._database is None or self._database.url != database_url:
                self._database = Database(database_url, max_size=2, timeout_s=1.0, name="nexo-ops", connect_kwargs=connect_kwargs)

    def observe(self, seconds: float, outcome: str) -> None:
        """Buffer one order transaction sample; the flusher thread stores it."""
        sample = (datetime.now(UTC), max(0.0, float(seconds)), outcome)
        with self._lock:
            if self._database is None:
                return
            if len(self._buffer) == self._buffer.maxlen:
                self.dropped += 1  # the append below drops the oldest
            self._buffer.append(sample)
            full = len(self._buffer) >= FLUSH_AT
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="nexo-ops-recorder", daemon=True)
                self._thread.start()
        if full:
            self._wake.set()

    def record_event(self, kind: str) -> bool:
        """Store one signal event now, in its own short transaction; False (and a log line) if it could not."""
        database = self._database
        if database is None:
            return False
        try:
            with database.transaction() as tx:
                queries.insert_signal_event(tx.conn, kind)
                tx.commit()
            return True
        except Exception as exc:  # never into the caller: the order's answer matters more than the signal
            log.warning("could not record ops signal %s: %s", kind, type(exc).__name__)
            return False

    def flush(self) -> int:
        """Write the buffered samples now; return how many were stored (0 when the database is down)."""
        with self._flush_lock:
            with self._lock:
                batch, self._buffer = list(self._buffer), deque(maxlen=MAX_BUFFERED)
                database = self._database
            if database is None:
                return 0
            if not batch:
                return 0
            try:
                with database.transaction() as tx:
                    # Telemetry: losing the last batch in a crash is fine, waiting for an fsync is not.
                    queries.skip_commit_wait(tx.conn)
                    queries.insert_transaction_samples(tx.conn, batch)
                    tx.commit()
            except Exception as exc:
                self._put_back(batch)
                if not self._failing:
                    log.warning("could not store %d order transaction sample(s): %s; will retry", len(batch), type(exc).__name__)
                self._failing = True
                return 0
            if self._failing:
                log.info("order transaction samples are being stored again")
            self._failing = False
            return len(batch)

    def discard_buffer(self) -> None:
        """Forget samples not yet stored (tests start from a clean slate)."""
        with self._flush_lock, self._lock:
            self._buffer.clear()

    def _put_back(self, batch: list) -> None:
        with self._lock:
            kept = batch + list(self._buffer)
            self.dropped += max(0, len(kept) - MAX_BUFFERED)
            self._buffer = deque(kept[-MAX_BUFFERED:], maxlen=MAX_BUFFERED)

    def _run(self) -> None:
        while True:
            self._wake.wait(FLUSH_INTERVAL_S)
            self._wake.clear()
            self.flush()


recorder = Recorder()
