"""nexo.telemetry.metrics hooks on real Postgres: durable, shared by every process, and never raising into an order."""

from __future__ import annotations

import logging
import subprocess
import sys
import time

import pytest

from nexo.telemetry import metrics
from nexo.telemetry import recorder as recorder_module
from nexo.telemetry.recorder import Recorder, recorder
from tests.helpers import free_port
from tests.ops_helpers import ROOT


def _count(db, sql: str) -> int:
    with db.reading() as conn:
        return list(conn.execute(sql).fetchone().values())[0]


@pytest.fixture
def fresh_samples(db):
    recorder.flush()
    with db.transaction() as tx:
        tx.execute("DELETE FROM order_transaction_sample")
        tx.commit()


@pytest.fixture
def unreachable_recorder(monkeypatch):
    """The hooks' recorder pointed at a Postgres nobody listens on."""
    dead = Recorder()
    dead.configure(f"postgresql://nexo@127.0.0.1:{free_port()}/nexo")
    monkeypatch.setattr(metrics, "recorder", dead)
    yield dead
    dead.discard_buffer()
    dead._database.close()
    dead._database = None  # its flusher thread and exit hook have nothing left to do


def test_a_conflict_is_committed_at_once_for_every_process_to_see(app, db):
    with app.app_context():
        metrics.count_request_id_reused()
    # another connection of another pool sees it: it was committed by its own transaction
    assert _count(db, "SELECT count(*) FROM ops_signal_event WHERE kind = 'request_id_reused'") == 1


def test_conflicts_from_another_process_land_in_the_same_table(db):
    code = "from nexo import create_app; from nexo.telemetry import metrics; create_app(); metrics.count_request_id_reused()"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)
    assert _count(db, "SELECT count(*) FROM ops_signal_event WHERE kind = 'request_id_reused'") == 1


def test_durations_are_buffered_then_stored_by_one_flush(fresh_samples, db):
    for ms in (5, 7, 9):
        metrics.observe_order_transaction(ms / 1000, "confirmed")
    metrics.observe_order_transaction(0.02, "Not A Label!")  # a caller's bug must not add series
    assert recorder.flush() == 4
    with db.reading() as conn:
        rows = conn.execute("SELECT seconds, outcome FROM order_transaction_sample ORDER BY seconds").fetchall()
    assert [(r["seconds"], r["outcome"]) for r in rows] == [
        (0.005, "confirmed"),
        (0.007, "confirmed"),
        (0.009, "confirmed"),
        (0.02, "other"),
    ]


def test_the_flusher_thread_stores_samples_without_being_asked(fresh_samples, db, monkeypatch):
    monkeypatch.setattr(recorder_module, "FLUSH_AT", 1)  # wake it at once instead of in 2 s
    metrics.observe_order_transaction(0.011, "confirmed")
    for _ in range(200):  # ≤ 20 s; typically one iteration
        if _count(db, "SELECT count(*) FROM order_transaction_sample") == 1:
            break
        time.sleep(0.1)
    assert _count(db, "SELECT count(*) FROM order_transaction_sample") == 1


def test_hooks_never_raise_when_the_database_is_down(unreachable_recorder, caplog):
    caplog.set_level(logging.WARNING)
    metrics.count_request_id_reused()  # returns, does not raise
    metrics.observe_order_transaction(0.01, "confirmed")
    assert unreachable_recorder.flush() == 0
    assert any("could not record ops signal request_id_reused" in r.getMessage() for r in caplog.records)
    assert any("could not store 1 order transaction sample" in r.getMessage() for r in caplog.records)


def test_samples_wait_in_memory_while_the_database_is_down_and_are_stored_when_it_is_back(
    unreachable_recorder, settings, db, fresh_samples
):
    metrics.observe_order_transaction(0.01, "confirmed")
    metrics.observe_order_transaction(0.02, "conflict")
    assert unreachable_recorder.flush() == 0
    unreachable_recorder.configure(settings.database_url)  # the database is back
    assert unreachable_recorder.flush() == 2
    assert _count(db, "SELECT count(*) FROM order_transaction_sample") == 2


def test_the_buffer_is_bounded_while_the_database_is_down(monkeypatch):
    monkeypatch.setattr(recorder_module, "MAX_BUFFERED", 5)
    monkeypatch.setattr(recorder_module, "FLUSH_AT", 10**6)
    bounded = Recorder()
    bounded.configure(f"postgresql://nexo@127.0.0.1:{free_port()}/nexo")
    for _ in range(8):
        bounded.observe(0.01, "confirmed")
    assert len(bounded._buffer) == 5 and bounded.dropped == 3
    assert bounded.flush() == 0  # failed: the five go back, still bounded
    assert len(bounded._buffer) == 5
    bounded.discard_buffer()
    bounded._database.close()
    bounded._database = None
