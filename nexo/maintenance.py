"""The maintenance runner: retention and housekeeping, once for the whole fleet (ADR-019).

Every host given the `maintenance` role runs it (`python -m jobs.retention --every 86400`, the
Procfile's `retention`); only the holder of the `maintenance` lease works, the others wait to take
over. Its work: the retention pass (ADR-010, OUTBOX_RETENTION_DAYS), and each hour the telemetry
housekeeping that used to run in every process of every host: order transaction samples, old process
events, the rows of hosts unseen for NEXO_HOST_EXPIRY_S (so a host gone for good stops paging), and
sessions ended more than SESSION_KEEP_DAYS ago (ADR-018; the audit log keeps the trail).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from nexo import leases
from nexo.auth import sessions
from nexo.db import Database
from nexo.deadletters.retention import run_retention
from nexo.processes import repository as processes
from nexo.settings import Settings
from nexo.telemetry import queries as telemetry
from nexo.telemetry.recorder import SAMPLE_KEEP_DAYS

log = logging.getLogger(__name__)

LEASE = "maintenance"
TICK_S = 5.0  # how often the lease is renewed (or tried by a stand-by)
LEASE_TTL_S = 30.0  # a holder gone this long is replaced: several ticks missed, not one slow one
HOUSEKEEPING_EVERY_S = 3600.0


@dataclass
class MaintenanceRunner:
    """Holds the maintenance lease when it can and runs what is due while it does."""

    db: Database
    settings: Settings
    retention_every_s: float
    holder: str = field(default_factory=lambda: "")
    ttl_s: float = LEASE_TTL_S
    clock: Callable[[], float] = time.monotonic
    leader: bool = False
    _next: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.holder = self.holder or f"{self.settings.fleet.host_id}:maintenance:{os.getpid()}"

    def tick(self) -> bool:
        """Take or renew the lease; if held, run whatever is due. Returns whether this runner leads."""
        with self.db.transaction() as tx:
            leading = leases.acquire(tx.conn, LEASE, self.holder, self.ttl_s)
            tx.commit()
        if leading != self.leader:
            log.info("maintenance %s: %s", self.holder, "took the lease" if leading else "lost the lease; standing by")
            self.leader = leading
            self._next.clear()  # a new leader runs everything once: the last one may have died mid-way
        if leading:
            self._run_due("housekeeping", HOUSEKEEPING_EVERY_S, self.housekeeping)
            self._run_due("retention", self.retention_every_s, lambda: run_retention(self.db, self.settings))
        return leading

    def _run_due(self, name: str, every_s: float, task: Callable[[], object]) -> None:
        now = self.clock()
        if now < self._next.get(name, float("-inf")):
            return
        self._next[name] = now + every_s
        try:
            task()
        except Exception:  # the next pass tries again; one bad pass must not end the runner
            log.exception("maintenance %s failed", name)

    def housekeeping(self) -> dict[str, int]:
        """Purge telemetry samples, old process events, the rows of hosts gone for good and old sessions; return the counts."""
        security = self.settings.security
        limits = sessions.Limits(security.session_idle_s, security.session_max_s, security.session_touch_s)
        with self.db.transaction() as tx:
            counts = {
                "transaction_samples": telemetry.purge_transaction_samples(tx.conn, SAMPLE_KEEP_DAYS),
                "process_events": processes.purge_old_events(tx.conn),
                "gone_hosts_events": processes.purge_gone_hosts(tx.conn, self.settings.fleet.host_expiry_s),
                "sessions": sessions.purge(tx.conn, keep_days=security.session_keep_days, limits=limits),
            }
            tx.commit()
        log.info("maintenance housekeeping %s", " ".join(f"{k}={v}" for k, v in counts.items()))
        return counts

    def release(self) -> None:
        """Give the lease up on a clean stop, so a stand-by takes over at its next tick."""
        if self.leader:
            with self.db.transaction() as tx:
                leases.release(tx.conn, LEASE, self.holder)
                tx.commit()
            self.leader = False

    def run_forever(self, stop: threading.Event, tick_s: float = TICK_S) -> None:
        """Tick until `stop` is set; a failed tick (database down) is logged and retried."""
        while not stop.is_set():
            try:
                self.tick()
            except Exception as exc:
                log.warning("maintenance tick failed (%s); retrying in %.0f s", type(exc).__name__, tick_s)
            stop.wait(tick_s)
        try:
            self.release()
        except Exception:
            log.warning("maintenance: could not release the lease; it expires within %.0f s", self.ttl_s)
