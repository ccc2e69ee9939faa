"""Retention job: `python -m jobs.retention` runs one pass; `--every 86400` is the maintenance runner.

With `--every` it runs until SIGTERM as the fleet's maintenance runner (nexo/maintenance.py, ADR-019):
whichever host holds the maintenance lease runs a retention pass every SECONDS and the hourly
housekeeping; the others stand by. Thin entry point (STYLE.md): read settings, open a pool, call nexo.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from nexo import observability
from nexo.auth.accounts import purge_sessions
from nexo.db import Database
from nexo.deadletters.retention import run_retention
from nexo.maintenance import MaintenanceRunner
from nexo.settings import Settings, SettingsError, start_up_warnings

log = logging.getLogger("jobs.retention")


def main(argv: list[str] | None = None) -> int:
    """Run retention once (exit 1 if a destination failed) or every N seconds until stopped."""
    parser = argparse.ArgumentParser(prog="python -m jobs.retention", description=__doc__)
    parser.add_argument(
        "--every", type=float, metavar="SECONDS", help="keep running, one pass every SECONDS (86400 = daily); omit to run once"
    )
    args = parser.parse_args(argv)
    if args.every is not None and args.every <= 0:
        parser.error("--every must be greater than 0")
    observability.configure_logging()
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        log.error("retention not started: %s", exc)
        return 2
    for warning in start_up_warnings(settings):  # README, Running it safely: said by every production program
        log.warning("start-up warning: %s", warning)
    db = Database(settings.database_url, max_size=2, name="retention", connect_kwargs=settings.database.connect_kwargs())
    try:
        if args.every is None:
            failed = bool(run_retention(db, settings).failures)
            return 1 if not _purge_sessions(db, settings) or failed else 0
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        runner = MaintenanceRunner(db, settings, retention_every_s=args.every)
        log.info("maintenance runner %s: retention every %gs while it holds the lease", runner.holder, args.every)
        runner.run_forever(stop)
        log.info("retention stopped")
        return 0
    finally:
        db.close()


def _purge_sessions(db: Database, settings: Settings) -> bool:
    """Ended sessions older than SESSION_KEEP_DAYS go (ADR-018); the audit log keeps the trail. True if it ran."""
    try:
        deleted = purge_sessions(db, settings.security)
    except Exception:
        log.exception("retention purge failed table=user_session")
        return False
    log.info("retention purge table=user_session deleted=%d keep_days=%d", deleted, settings.security.session_keep_days)
    return True


if __name__ == "__main__":
    sys.exit(main())
