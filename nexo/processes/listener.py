"""What the supervisor event listener does with each process-state event (jobs/process_events.py).

supervisord reports every state change of every program; this records the ones that matter for
supervision (started, died while running, died while starting, given up) in process_event, and
starts a FATAL program again after a cool-down. supervisord gives up on a program after
STARTRETRIES quick deaths in a row (scripts/supervisor_conf.py); most such crash loops are transient
(a database still starting, a full disk being cleaned), so giving up for good would turn a minute's
trouble into an outage nobody notices. Retrying every FATAL_COOLDOWN_S keeps a broken program from
spinning (at most STARTRETRIES tries per cycle) and counts every cycle.

The revival is driven by supervisord's own view, not by a timer of ours: on every TICK event (each
5 s, scripts/supervisor_conf.py) and once when the listener starts, every program that
getAllProcessInfo() reports FATAL for at least the cool-down is started. A listener restarted during a
cool-down, or a start that failed once, is then caught up on the next tick (ADR-013).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from nexo.db import Database
from nexo.processes import repository

log = logging.getLogger(__name__)

KINDS = {
    "PROCESS_STATE_RUNNING": "running",
    "PROCESS_STATE_EXITED": "exited",
    "PROCESS_STATE_BACKOFF": "backoff",
    "PROCESS_STATE_FATAL": "fatal",
}
FATAL_COOLDOWN_S = 30.0
PURGE_EVERY = 500
# How often a tick also says "this host is alive" (host_seen): well under NEXO_HOST_EXPIRY_S's minimum.
HEARTBEAT_EVERY_S = 30.0


class SupervisorShuttingDown(Exception):
    """supervisord refuses the call: it is stopping its programs (its SHUTDOWN_STATE fault), this listener too."""


class ProcessEventRecorder:
    """Records supervisord's process-state events for one host; revives FATAL programs after a cool-down.

    all_processes: supervisord's getAllProcessInfo() (dicts with name, group, statename, stop, now).
    """

    def __init__(
        self,
        db: Database,
        host: str,
        start_process: Callable[[str], None],
        all_processes: Callable[[], list[dict]],
        *,
        cooldown_s: float = FATAL_COOLDOWN_S,
    ) -> None:
        self.db = db
        self.host = host
        self.start_process = start_process
        self.all_processes = all_processes
        self.cooldown_s = cooldown_s
        self._handled = 0
        self._fatal_seen: dict[str, float] = {}  # a program that never ran has no stop time: when we saw it
        self._last_heartbeat = float("-inf")
        self._shutting_down = False

    def handle(self, event_name: str, payload: dict[str, str]) -> str | None:
        """Record one event (payload: supervisord's key:value tokens); return the kind recorded, if any."""
        if event_name.startswith("TICK_"):
            self.heartbeat()
            self.revive_fatal()
            return None
        kind = KINDS.get(event_name)
        if kind is None:
            return None
        program = payload.get("processname", "?")
        pid = int(payload["pid"]) if payload.get("pid", "").isdigit() else None
        detail = _detail(kind, payload)
        level = logging.INFO if kind == "running" else logging.WARNING
        log.log(level, "program %s %s%s", program, kind, f" ({detail})" if detail else "")
        self._record(program, kind, pid, detail)
        return kind

    def heartbeat(self) -> None:
        """Mark this host seen, at most every HEARTBEAT_EVERY_S (ADR-019: a host unseen long enough expires)."""
        if time.monotonic() - self._last_heartbeat < HEARTBEAT_EVERY_S:
            return
        try:
            with self.db.transaction() as tx:
                repository.mark_host_seen(tx.conn, self.host)
                tx.commit()
            self._last_heartbeat = time.monotonic()
        except Exception as exc:  # the database is down: the next tick tries again
            log.warning("could not mark host %s seen: %s", self.host, type(exc).__name__)

    def _record(self, program: str, kind: str, pid: int | None, detail: str) -> None:
        with self.db.transaction() as tx:
            repository.insert_event(tx.conn, self.host, program, kind, pid, detail)
            self._handled += 1
            if self._handled % PURGE_EVERY == 1:
                repository.purge_old_events(tx.conn)
            tx.commit()

    def revive_fatal(self) -> list[str]:
        """Start every program FATAL for at least the cool-down; return the names started."""
        revived: list[str] = []
        try:
            processes = self.all_processes()
        except SupervisorShuttingDown:
            self._note_shutdown()
            return revived
        for info in processes:
            program, group = info["name"], info.get("group", "")
            name = f"{group}:{program}" if group and group != program else program
            if info.get("statename") != "FATAL":
                self._fatal_seen.pop(name, None)
                continue
            since = info.get("stop") or self._fatal_seen.setdefault(name, info["now"])
            fatal_for = info["now"] - since
            if fatal_for < self.cooldown_s:
                continue
            try:
                self.start_process(name)
            except SupervisorShuttingDown:
                self._note_shutdown()
                return revived
            except Exception as exc:  # already started by an operator, …
                log.warning("program %s: could not start it again after FATAL (next tick tries again): %s", program, exc)
                continue
            revived.append(name)
            log.warning("program %s started again %.0f s after FATAL", program, fatal_for)
            try:
                self._record(program, "revived", None, f"started again {fatal_for:.0f} s after FATAL")
            except Exception:
                log.exception("program %s: could not record its revival", program)
        return revived

    def _note_shutdown(self) -> None:
        # A clean stop of `make run` (ADR-013): supervisord still sends ticks while it stops the programs,
        # and refuses every call meanwhile. Nothing is wrong and nothing is to be revived: say so once.
        if not self._shutting_down:
            log.info("supervisord is shutting down: no program is started again")
        self._shutting_down = True


def _detail(kind: str, payload: dict[str, str]) -> str:
    if kind == "exited":
        return "exit expected" if payload.get("expected") == "1" else "unexpected exit"
    if kind == "backoff":
        return f"died while starting (try {payload.get('tries', '?')})"
    if kind == "fatal":
        return "supervisor gave up after repeated quick deaths"
    return ""
