"""The maintenance runner: retention and housekeeping, once for the whole fleet (ADR-019).

Every host given the `maintenance` role runs it (`python -m jobs.retention --every 86400`, the
Procfile's `retention`); only the holder of the `maintenance` lease works, the others wait to take
over. Its work: filing the outbox's settled events by month (ADR-019, nexo/outbox/history.py), the
retention pass (ADR-010, OUTBOX_RETENTION_DAYS), and each hour the telemetry
housekeeping that used to run in every process of every host: order transaction samples, old process
events, the rows of hosts unseen for NEXO_HOST_EXPIRY_S (so a host gone for good stops paging), and
sessions ended more than SESSION_KEEP_DAYS ago (ADR-018; the audit log keeps the trail). With the embedded
Postgres, the backup round too (ADR-016): a base backup and a verify a day, old ones pruned. With SMTP_URL
set, the email sender too (nexo/mail/): every MAIL_POLL_S, in a thread of its own, the dead letters not yet
announced become emails and the due emails are sent.
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
from nexo.backup import schedule
from nexo.db import Database
from nexo.deadletters.announce import announce_new_dead_letters
from nexo.deadletters.retention import run_retention
from nexo.mail import repository as mail_rows
from nexo.mail.sender import send_due
from nexo.outbox import history
from nexo.processes import repository as processes
from nexo.settings import Settings, backup_settings
from nexo.telemetry import queries as telemetry
from nexo.telemetry.recorder import SAMPLE_KEEP_DAYS

log = logging.getLogger(__name__)

LEASE = "maintenance"
TICK_S = 5.0  # how often the lease is renewed (or tried by a stand-by)
LEASE_TTL_S = 30.0  # a holder gone this long is replaced: several ticks missed, not one slow one
HOUSEKEEPING_EVERY_S = 3600.0
# Settled outbox events are filed by month (ADR-019) every few minutes: each pass moves what settled over
# an hour ago (history.FILE_AFTER_S), so the live partition holds a little over an hour of deliveries. A
# pass stops after HISTORY_PASS_S, well inside the lease's TTL (the tick that renews it waits for the pass),
# and the next one starts at the next tick while events are left: the history of an install upgraded to
# migration 0700, all of it live at first, is filed in slices between renewals.
HISTORY_EVERY_S = 600.0
HISTORY_PASS_S = 15.0
# The backup round checks hourly what is due (a base backup and a verify a day each, ADR-016).
BACKUP_ROUND_EVERY_S = 3600.0
BACKUP_FIRST_ROUND_AFTER_S = 600.0
SENT_EMAIL_KEEP_DAYS = 30  # sent emails are kept a month for questions ("did Laura get it?"), then purged


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
    _backup_round: threading.Thread | None = None

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
            # ... but the backup round only once the start is over: a base backup and a verify are the
            # heaviest work Nexo does, and a start (migrations, workers warming up) is busy enough.
            self._next["backups"] = self.clock() + BACKUP_FIRST_ROUND_AFTER_S
        if leading:
            self._run_due("housekeeping", HOUSEKEEPING_EVERY_S, self.housekeeping)
            self._run_due("history", HISTORY_EVERY_S, self.file_history)
            self._run_due("retention", self.retention_every_s, lambda: run_retention(self.db, self.settings))
            self._run_due("backups", BACKUP_ROUND_EVERY_S, self.start_backup_round)
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
                "email_messages": mail_rows.purge_sent(tx.conn, keep_days=SENT_EMAIL_KEEP_DAYS),
            }
            tx.commit()
        log.info("maintenance housekeeping %s", " ".join(f"{k}={v}" for k, v in counts.items()))
        return counts

    def file_history(self) -> history.FilingReport:
        """One filing pass (ADR-019); when it left events to file, the next one is due at the next tick."""
        report = history.file_settled_events(self.db, budget_s=HISTORY_PASS_S)
        if report.more:
            self._next["history"] = self.clock()
        return report

    def start_backup_round(self) -> bool:
        """Start the backup round (ADR-016) in a thread of its own, when the embedded Postgres is in use.

        Its own thread: a base backup or a verify takes seconds to minutes, longer than the lease's TTL,
        and the lease must keep being renewed meanwhile. One round at a time.
        """
        if self._backup_round is not None and self._backup_round.is_alive():
            return False
        settings = backup_settings()
        if not schedule.embedded_in_use(settings):
            return False
        url = self.settings.database_url

        def round_() -> None:
            try:
                schedule.run_round(settings, url)
            except Exception:  # the next round tries again
                log.exception("maintenance backups failed")

        self._backup_round = threading.Thread(target=round_, name="backup-round", daemon=True)
        self._backup_round.start()
        return True

    def release(self) -> None:
        """Give the lease up on a clean stop, so a stand-by takes over at its next tick."""
        if self.leader:
            with self.db.transaction() as tx:
                leases.release(tx.conn, LEASE, self.holder)
                tx.commit()
            self.leader = False

    def mail_pass(self, stop: threading.Event | None = None) -> None:
        """Announce new dead letters by email, then send the due emails (nexo/mail/); nothing when SMTP_URL is unset."""
        if self.settings.mail is None:
            return
        announce_new_dead_letters(self.db)
        counts = send_due(self.db, self.settings.mail, stop=stop)
        if counts.sent or counts.retried or counts.failed:
            log.info("maintenance mail sent=%d retried=%d failed=%d", counts.sent, counts.retried, counts.failed)

    def _mail_loop(self, stop: threading.Event) -> None:
        # Its own thread: an SMTP server that answers slowly (each step bounded by SMTP_TIMEOUT_S) must not
        # hold up the lease's renewal, which the tick does every TICK_S. Only the leader sends, like every
        # maintenance job; the claim's SKIP LOCKED and fenced outcome keep a handover safe anyway.
        assert self.settings.mail is not None
        while not stop.is_set():
            if self.leader:
                try:
                    self.mail_pass(stop)
                except Exception as exc:  # database or SMTP trouble: the next pass tries again
                    log.warning(
                        "maintenance mail pass failed (%s); retrying in %g s", type(exc).__name__, self.settings.mail.poll_s
                    )
            stop.wait(self.settings.mail.poll_s)

    def run_forever(self, stop: threading.Event, tick_s: float = TICK_S) -> None:
        """Tick until `stop` is set; a failed tick (database down) is logged and retried."""
        mail = None
        if self.settings.mail is not None:
            mail = threading.Thread(target=self._mail_loop, args=(stop,), name="mail-sender", daemon=True)
            mail.start()
        while not stop.is_set():
            try:
                self.tick()
            except Exception as exc:
                log.warning("maintenance tick failed (%s); retrying in %.0f s", type(exc).__name__, tick_s)
            stop.wait(tick_s)
        if mail is not None:
            mail.join(timeout=2 * self.settings.mail.timeout_s if self.settings.mail else 0)
        try:
            self.release()
        except Exception:
            log.warning("maintenance: could not release the lease; it expires within %.0f s", self.ttl_s)
