"""The supervisor event listener's records (nexo.processes): restarts counted, state kept, FATAL revived."""

from __future__ import annotations

import threading
import time

from nexo.processes import repository
from nexo.processes.listener import ProcessEventRecorder


def programs(db) -> dict[str, dict]:
    with db.reading() as conn:
        return {row["program"]: row for row in repository.programs(conn)}


def test_exits_and_backoffs_count_as_restarts_and_the_last_event_is_the_state(db):
    recorder = ProcessEventRecorder(db, "host-a", start_process=lambda name: None)
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


def test_a_fatal_program_is_started_again_after_the_cool_down_and_that_is_recorded(db):
    started = threading.Event()
    names = []

    def start_process(name):
        names.append(name)
        started.set()

    recorder = ProcessEventRecorder(db, "host-a", start_process=start_process, cooldown_s=0.2)
    recorder.handle("PROCESS_STATE_FATAL", {"processname": "worker_1", "groupname": "nexo"})
    assert programs(db)["worker_1"]["state"] == "FATAL"
    assert started.wait(5), "the FATAL program was never started again"
    assert names == ["nexo:worker_1"]
    with db.reading() as conn:
        kinds = [r["kind"] for r in conn.execute(
            "SELECT kind FROM process_event WHERE program = 'worker_1' ORDER BY id").fetchall()]
    assert kinds[0] == "fatal"
    deadline = time.monotonic() + 5     # recorded by the timer thread right after start_process returned
    while programs(db)["worker_1"]["state"] != "RESTARTING" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert programs(db)["worker_1"]["state"] == "RESTARTING"


def test_purge_keeps_each_programs_latest_event(db):
    with db.transaction() as tx:
        tx.execute("INSERT INTO process_event (occurred_at, host, program, kind) VALUES"
                   " (now() - interval '40 days', 'h', 'old', 'exited'),"
                   " (now() - interval '39 days', 'h', 'old', 'running'),"
                   " (now() - interval '40 days', 'h', 'gone', 'running')")
        assert repository.purge_old_events(tx.conn) == 1
        tx.commit()
    rows = programs(db)
    assert rows["old"]["state"] == "RUNNING" and rows["gone"]["state"] == "RUNNING"
