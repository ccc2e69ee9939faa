"""The supervisor event listener's records (nexo.processes): restarts counted, state kept, FATAL revived."""

from __future__ import annotations

import logging
import xmlrpc.client

import pytest
from supervisor.xmlrpc import Faults

from jobs import process_events
from nexo.processes import repository
from nexo.processes.listener import ProcessEventRecorder


def programs(db) -> dict[str, dict]:
    with db.reading() as conn:
        return {row["program"]: row for row in repository.programs(conn)}


def test_exits_and_backoffs_count_as_restarts_and_the_last_event_is_the_state(db):
    recorder = ProcessEventRecorder(db, "host-a", start_process=lambda name: None, all_processes=list)
    recorder.handle("PROCESS_STATE_RUNNING", {"processname": "sweeper", "groupname": "nexo", "pid": "10"})
    recorder.handle("PROCESS_STATE_EXITED", {"processname": "sweeper", "groupname": "nexo", "pid": "10", "expected": "0"})
    recorder.handle("PROCESS_STATE_BACKOFF", {"processname": "sweeper", "groupname": "nexo", "tries": "1"})
    recorder.handle("PROCESS_STATE_RUNNING", {"processname": "sweeper", "groupname": "nexo", "pid": "12"})
    recorder.handle("PROCESS_STATE_RUNNING", {"processname": "web", "groupname": "nexo", "pid": "20"})
    assert recorder.handle("PROCESS_STATE_STOPPED", {"processname": "web", "groupname": "nexo"}) is None
    rows = programs(db)
    assert (rows["sweeper"]["restarts_24h"], rows["sweeper"]["state"], rows["sweeper"]["pid"]) == (2, "RUNNING", 12)
    assert rows["sweeper"]["last_restart_at"] is not None
    assert (rows["web"]["restarts_24h"], rows["web"]["state"], rows["web"]["last_restart_at"]) == (0, "RUNNING", None)


def info(name: str, state: str, stop: float, now: float = 1000.0, group: str = "nexo") -> dict:
    """One entry of supervisord's getAllProcessInfo()."""
    return {"name": name, "group": group, "statename": state, "stop": stop, "now": now}


def test_on_a_tick_a_program_fatal_for_the_cool_down_is_started_again_and_that_is_recorded(db):
    names = []
    processes = [
        info("worker_1", "FATAL", stop=960),
        info("sweeper", "FATAL", stop=990),
        info("web", "RUNNING", stop=0),
        info("process_events", "RUNNING", 0, group="process_events"),
    ]
    recorder = ProcessEventRecorder(db, "host-a", start_process=names.append, all_processes=lambda: processes, cooldown_s=30)
    recorder.handle("PROCESS_STATE_FATAL", {"processname": "worker_1", "groupname": "nexo"})
    assert programs(db)["worker_1"]["state"] == "FATAL"
    assert names == []  # the FATAL event itself starts nothing
    assert recorder.handle("TICK_5", {"when": "1000"}) is None
    assert names == ["nexo:worker_1"]  # the sweeper is FATAL for 10 s only: not yet
    with db.reading() as conn:
        kinds = [
            r["kind"] for r in conn.execute("SELECT kind FROM process_event WHERE program = 'worker_1' ORDER BY id").fetchall()
        ]
    assert kinds == ["fatal", "revived"]
    assert programs(db)["worker_1"]["state"] == "RESTARTING"


def test_a_listener_started_after_the_fatal_event_still_revives_and_a_failed_start_is_tried_again(db):
    # The listener that saw the FATAL event was restarted during the cool-down (ADR-013): the new one
    # knows only supervisord's view, at its start and on each tick.
    tries = []

    def start_process(name):
        tries.append(name)
        if len(tries) == 1:
            raise OSError("supervisord busy")

    processes = [info("fiscal", "FATAL", stop=900)]
    recorder = ProcessEventRecorder(db, "host-b", start_process=start_process, all_processes=lambda: processes)
    assert recorder.revive_fatal() == []  # the start failed: nothing recorded
    assert recorder.handle("TICK_5", {}) is None
    assert tries == ["nexo:fiscal", "nexo:fiscal"]
    assert programs(db)["fiscal"]["state"] == "RESTARTING"


def test_a_program_that_never_ran_waits_the_cool_down_from_when_it_was_first_seen_fatal(db):
    names, now = [], [1000.0]
    recorder = ProcessEventRecorder(
        db,
        "host-c",
        start_process=names.append,
        cooldown_s=30,
        all_processes=lambda: [info("retention", "FATAL", stop=0, now=now[0])],
    )
    recorder.revive_fatal()
    now[0] = 1029.0
    recorder.revive_fatal()
    assert names == []
    now[0] = 1031.0
    recorder.revive_fatal()
    assert names == ["nexo:retention"]


def test_purge_keeps_each_programs_latest_event(db):
    with db.transaction() as tx:
        tx.execute(
            "INSERT INTO process_event (occurred_at, host, program, kind) VALUES"
            " (now() - interval '40 days', 'h', 'old', 'exited'),"
            " (now() - interval '39 days', 'h', 'old', 'running'),"
            " (now() - interval '40 days', 'h', 'gone', 'running')"
        )
        assert repository.purge_old_events(tx.conn) == 1
        tx.commit()
    rows = programs(db)
    assert rows["old"]["state"] == "RUNNING" and rows["gone"]["state"] == "RUNNING"


class ShuttingDownSupervisor:
    """supervisord's RPC interface while it stops its programs: every call is refused with its SHUTDOWN_STATE fault."""

    def __init__(self):
        self.supervisor = self
        self.calls = 0

    def _refuse(self, *args):
        self.calls += 1
        raise xmlrpc.client.Fault(Faults.SHUTDOWN_STATE, "SHUTDOWN_STATE")

    getAllProcessInfo = startProcess = _refuse


def test_ticks_while_supervisord_shuts_down_are_quiet_and_record_nothing(db, monkeypatch, caplog):
    # A clean stop of `make run`: supervisord still ticks while it stops the programs and refuses every
    # call; the listener says so once, at INFO, and acknowledges the events (no ERROR, no traceback).
    supervisor = ShuttingDownSupervisor()
    monkeypatch.setattr(process_events.childutils, "getRPCInterface", lambda environ: supervisor)
    recorder = ProcessEventRecorder(db, "host-d", process_events.start_process, process_events.all_processes)
    caplog.set_level(logging.INFO)
    assert recorder.revive_fatal() == []
    assert recorder.handle("TICK_5", {"when": "1000"}) is None
    assert recorder.handle("TICK_5", {"when": "1005"}) is None
    assert supervisor.calls == 3
    assert [r.levelname for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert [r.getMessage() for r in caplog.records if "shutting down" in r.getMessage()] == [
        "supervisord is shutting down: no program is started again"
    ]
    assert programs(db) == {}


def test_a_start_refused_by_a_supervisord_shutting_down_is_not_a_warning(db, monkeypatch, caplog):
    processes = [info("fiscal", "FATAL", stop=900)]
    monkeypatch.setattr(process_events.childutils, "getRPCInterface", lambda environ: ShuttingDownSupervisor())
    recorder = ProcessEventRecorder(db, "host-e", process_events.start_process, all_processes=lambda: processes)
    caplog.set_level(logging.INFO)
    assert recorder.revive_fatal() == []
    assert [r.levelname for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert programs(db) == {}


def test_any_other_supervisord_fault_still_fails_the_call(monkeypatch):
    class Refusing:
        def __init__(self):
            self.supervisor = self

        def getAllProcessInfo(self):
            raise xmlrpc.client.Fault(Faults.FAILED, "FAILED")

    monkeypatch.setattr(process_events.childutils, "getRPCInterface", lambda environ: Refusing())
    with pytest.raises(xmlrpc.client.Fault):
        process_events.all_processes()
