"""What the supervisor event listener does with each process-state event (jobs/process_events.py).

supervisord reports every state change of every program; this records the ones that matter for
supervision (started, died while running, died while starting, given up) in process_event, and
starts a FATAL program again after a cool-down. supervisord gives up on a program after
STARTRETRIES quick deaths in a row (scripts/supervisor_conf.py); most such crash loops are transient
(a database still starting, a full disk being cleaned), so giving up for good would turn a minute's
trouble into an outage nobody notices. Retrying every FATAL_COOLDOWN_S keeps a broken program from
spinning (at most STARTRETRIES tries per cycle) and counts every cycle.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from nexo.processes import repository

log = logging.getLogger(__name__)

KINDS = {"PROCESS_STATE_RUNNING": "running", "PROCESS_STATE_EXITED": "exited",
         "PROCESS_STATE_BACKOFF": "backoff", "PROCESS_STATE_FATAL": "fatal"}
FATAL_COOLDOWN_S = 30.0
PURGE_EVERY = 500


class ProcessEventRecorder:
    """Records supervisord's process-state events for one host; revives FATAL programs after a cool-down."""

    def __init__(self, db, host: str, start_process: Callable[[str], None], *,
                 cooldown_s: float = FATAL_COOLDOWN_S):
        self.db = db
        self.host = host
        self.start_process = start_process
        self.cooldown_s = cooldown_s
        self._handled = 0

    def handle(self, event_name: str, payload: dict[str, str]) -> str | None:
        """Record one event (payload: supervisord's key:value tokens); return the kind recorded, if any."""
        kind = KINDS.get(event_name)
        if kind is None:
            return None
        program, group = payload.get("processname", "?"), payload.get("groupname", "")
        pid = int(payload["pid"]) if payload.get("pid", "").isdigit() else None
        detail = _detail(kind, payload)
        level = logging.INFO if kind == "running" else logging.WARNING
        log.log(level, "program %s %s%s", program, kind, f" ({detail})" if detail else "")
        if kind == "fatal":
            self._revive_later(f"{group}:{program}" if group and group != program else program, program)
        self._record(program, kind, pid, detail)
        return kind

    def _record(self, program: str, kind: str, pid: int | None, detail: str) -> None:
        with self.db.transaction() as tx:
            repository.insert_event(tx.conn, self.host, program, kind, pid, detail)
            self._handled += 1
            if self._handled % PURGE_EVERY == 1:
                repository.purge_old_events(tx.conn)
            tx.commit()

    def _revive_later(self, name: str, program: str) -> None:
        timer = threading.Timer(self.cooldown_s, self._revive, [name, program])
        timer.daemon = True
        timer.start()

    def _revive(self, name: str, program: str) -> None:
        try:
            self.start_process(name)
        except Exception as exc:  # already started by an operator, supervisord shutting down, …
            log.warning("program %s: could not start it again after FATAL: %s", program, exc)
            return
        log.warning("program %s started again %.0f s after FATAL", program, self.cooldown_s)
        try:
            self._record(program, "revived", None, f"started again {self.cooldown_s:.0f} s after FATAL")
        except Exception:
            log.exception("program %s: could not record its revival", program)


def _detail(kind: str, payload: dict[str, str]) -> str:
    if kind == "exited":
        return "exit expected" if payload.get("expected") == "1" else "unexpected exit"
    if kind == "backoff":
        return f"died while starting (try {payload.get('tries', '?')})"
    if kind == "fatal":
        return "supervisor gave up after repeated quick deaths"
    return ""
