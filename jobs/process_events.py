"""supervisord's event listener (`python -m jobs.process_events`): records process restarts for /ops and /metrics.

Thin entry point (STYLE.md): speak supervisord's event-listener protocol on stdin/stdout, hand each
event to nexo.processes.listener. Its stdout belongs to the protocol; its log lines go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import xmlrpc.client
from collections.abc import Iterator
from contextlib import contextmanager

from supervisor import childutils
from supervisor.xmlrpc import Faults

from nexo.db import Database
from nexo.observability import configure_logging
from nexo.processes.listener import FATAL_COOLDOWN_S, ProcessEventRecorder, SupervisorShuttingDown
from nexo.settings import Settings, SettingsError

log = logging.getLogger("jobs.process_events")


@contextmanager
def _refused_while_shutting_down() -> Iterator[None]:
    """Turn supervisord's SHUTDOWN_STATE fault into SupervisorShuttingDown; any other fault stays as it is."""
    try:
        yield
    except xmlrpc.client.Fault as fault:
        if fault.faultCode == Faults.SHUTDOWN_STATE:
            raise SupervisorShuttingDown(fault.faultString) from fault
        raise


def start_process(name: str) -> None:
    """Ask supervisord (over the socket it passes in SUPERVISOR_SERVER_URL) to start a program."""
    with _refused_while_shutting_down():
        childutils.getRPCInterface(os.environ).supervisor.startProcess(name, False)


def all_processes() -> list[dict]:
    """supervisord's view of every program (state, when it last stopped, its clock)."""
    with _refused_while_shutting_down():
        return childutils.getRPCInterface(os.environ).supervisor.getAllProcessInfo()


def main(argv: list[str] | None = None) -> int:
    """Acknowledge every event, recorded or not: a listener that stops answering stalls supervisord's events."""
    parser = argparse.ArgumentParser(prog="python -m jobs.process_events", description=__doc__)
    parser.add_argument(
        "--fatal-retry-s",
        type=float,
        default=FATAL_COOLDOWN_S,
        metavar="SECONDS",
        help=f"start a FATAL program again after SECONDS (default {FATAL_COOLDOWN_S:g})",
    )
    args = parser.parse_args(argv)
    configure_logging()
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"nexo process_events: configuration error: {exc}", file=sys.stderr)
        return 2
    db = Database(
        settings.database_url, max_size=1, timeout_s=3, name="process_events", connect_kwargs=settings.database.connect_kwargs()
    )
    recorder = ProcessEventRecorder(db, settings.fleet.host_id, start_process, all_processes, cooldown_s=args.fatal_retry_s)
    # A program may have gone FATAL while no listener ran (this one restarting): check before the first tick.
    try:
        recorder.revive_fatal()
    except Exception:
        log.exception("could not check for FATAL programs at start")
    while True:
        headers, payload = childutils.listener.wait(sys.stdin, sys.stdout)
        try:
            recorder.handle(headers.get("eventname", ""), childutils.get_headers(payload))
        except Exception:
            # The database is down, most likely: the line above is in the log; the count misses one.
            log.exception("could not record %s %s", headers.get("eventname"), payload)
        childutils.listener.ok(sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
