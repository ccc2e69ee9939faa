"""Retention (ADR-010) on real Postgres: what goes, what stays, and what is refused."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nexo.deadletters import repository, service
from nexo.deadletters.retention import purge_dead_letters, purge_delivered_events, run_retention
from tests.dead_letter_factory import age, audit_rows, make_dead_letter, row

ROOT = Path(__file__).resolve().parents[2]


def exists(db, dead_letter_id) -> bool:
    return row(db, "SELECT count(*) AS n FROM dead_letter WHERE id = %s", [dead_letter_id])["n"] == 1


def resolved(db, *, days_ago: int, destination="fiscal", how="replay") -> int:
    made = make_dead_letter(db, destination=destination)
    if how == "replay":
        service.replay(db, made["id"], "marta")
    else:
        service.discard(db, made["id"], "marta", "no corresponde")
    age(db, made["id"], days=days_ago)
    return made["id"]


def test_purge_removes_terminal_dead_letters_past_the_grace_and_keeps_the_rest(db):
    old_replayed = resolved(db, days_ago=91)
    old_discarded = resolved(db, days_ago=200, how="discard")
    recent = resolved(db, days_ago=89)
    old_pending = make_dead_letter(db)["id"]
    age(db, old_pending, days=400)
    assert purge_dead_letters(db, destination="fiscal", grace_days=90) == 2
    assert not exists(db, old_replayed) and not exists(db, old_discarded)
    assert exists(db, recent) and exists(db, old_pending)
    [trace] = audit_rows(db, "dead_letter.purged")
    assert trace["object_id"] == "fiscal" and sorted(trace["details"]["ids"]) == sorted([str(old_replayed), str(old_discarded)])


def test_pending_dead_letters_are_never_purged_even_with_the_shortest_grace(db):
    pending = make_dead_letter(db)["id"]
    age(db, pending, days=10_000)
    # A pending row that somehow carries an old resolution time (a hand-edited row) is still not purged:
    # the status condition, not only the NULL resolved_at, keeps it.
    odd = make_dead_letter(db)["id"]
    with db.transaction() as tx:
        tx.execute("UPDATE dead_letter SET resolved_at = now() - interval '500 days' WHERE id = %s", [odd])
        tx.commit()
    assert purge_dead_letters(db, destination="fiscal", grace_days=1) == 0
    assert exists(db, pending) and exists(db, odd)


def test_purge_is_scoped_to_one_destination(db):
    fiscal = resolved(db, days_ago=100)
    warehouse = resolved(db, days_ago=100, destination="warehouse")
    assert purge_dead_letters(db, destination="warehouse", grace_days=90) == 1
    assert exists(db, fiscal) and not exists(db, warehouse)


def test_purge_works_in_batches_until_nothing_is_left(db):
    ids = [resolved(db, days_ago=100) for _ in range(5)]
    assert purge_dead_letters(db, destination="fiscal", grace_days=90, batch=2) == 5
    assert not any(exists(db, i) for i in ids)
    assert [r["details"]["deleted"] for r in audit_rows(db, "dead_letter.purged")] == [2, 2, 1]


@pytest.mark.parametrize("days", [0, -1, 0.5, True, None])
def test_a_grace_below_one_day_is_refused_before_any_sql(db, settings, days):
    doomed = resolved(db, days_ago=5)
    with pytest.raises(ValueError):
        purge_dead_letters(db, destination="fiscal", grace_days=days)
    with db.transaction() as tx, pytest.raises(ValueError):
        repository.purge_terminal_dead_letters(tx.conn, destination="fiscal", grace_days=days)
    with pytest.raises(ValueError):
        run_retention(db, dataclasses.replace(settings, dead_letter_grace_days=days))
    with pytest.raises(ValueError):
        purge_delivered_events(db, destination="fiscal", older_than_days=days)
    assert exists(db, doomed)


def delivered_event(db, *, days_ago: int, destination="fiscal", with_dead_letter=False):
    made = make_dead_letter(db, destination=destination)
    if with_dead_letter:
        service.replay(db, made["id"], "marta")
    with db.transaction() as tx:
        if not with_dead_letter:
            tx.execute("DELETE FROM dead_letter WHERE id = %s", [made["id"]])
        tx.execute(
            "UPDATE outbox_event SET status = 'ENTREGADO', delivered_at = now() - make_interval(days => %s) WHERE id = %s",
            [days_ago, made["event_id"]],
        )
        tx.commit()
    return made["event_id"]


def event_exists(db, event_id) -> bool:
    return row(db, "SELECT count(*) AS n FROM outbox_event WHERE id = %s", [event_id])["n"] == 1


def test_delivered_events_are_kept_when_no_outbox_retention_is_configured(db, settings, caplog):
    old = delivered_event(db, days_ago=3650)
    with caplog.at_level(logging.INFO, logger="nexo.deadletters.retention"):
        report = run_retention(db, dataclasses.replace(settings, outbox_retention_days=None))
    assert report.outbox_events is None and event_exists(db, old)
    assert any("table=outbox_event" in m and "policy=undefined" in m for m in caplog.messages)


def test_delivered_events_are_purged_only_past_the_configured_retention(db, settings, caplog):
    old = delivered_event(db, days_ago=40)
    recent = delivered_event(db, days_ago=20)
    guarded = delivered_event(db, days_ago=40, with_dead_letter=True)  # its resolved dead letter is within grace
    pending = make_dead_letter(db)["event_id"]  # FALLIDO, never an outbox purge target
    with caplog.at_level(logging.INFO, logger="nexo.deadletters.retention"):
        report = run_retention(db, dataclasses.replace(settings, outbox_retention_days=30))
    assert report.outbox_events == {"fiscal": 1, "warehouse": 0, "webhook": 0}
    assert not event_exists(db, old)
    assert event_exists(db, recent) and event_exists(db, guarded) and event_exists(db, pending)
    assert "retention purge table=outbox_event destination=fiscal deleted=1 older_than_days=30" in caplog.messages
    assert "retention purge table=dead_letter destination=fiscal deleted=0 grace_days=90" in caplog.messages


def test_the_standalone_command_runs_one_pass_and_logs_its_counts(db):
    gone = resolved(db, days_ago=120, destination="warehouse")
    env = {**os.environ, "DEAD_LETTER_GRACE_DAYS": "90"}
    env.pop("OUTBOX_RETENTION_DAYS", None)
    done = subprocess.run(
        [sys.executable, "-m", "jobs.retention"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    messages = [json.loads(line)["msg"] for line in done.stderr.splitlines() if line.startswith("{")]
    assert "retention purge table=dead_letter destination=warehouse deleted=1 grace_days=90" in messages
    assert any("OUTBOX_RETENTION_DAYS_unset" in m for m in messages)
    assert not exists(db, gone)


def test_the_command_refuses_a_grace_below_one_day(db):
    kept = resolved(db, days_ago=120)
    done = subprocess.run(
        [sys.executable, "-m", "jobs.retention"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "DEAD_LETTER_GRACE_DAYS": "0"},
        timeout=60,
        check=False,
    )
    assert done.returncode != 0 and "DEAD_LETTER_GRACE_DAYS" in done.stderr
    assert exists(db, kept)


def test_the_daily_mode_runs_a_pass_at_start_and_stops_cleanly_on_sigterm(db, tmp_path):
    from tests.relay_fixtures import wait_until

    gone = resolved(db, days_ago=120)
    log_path = tmp_path / "retention.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jobs.retention", "--every", "86400"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        wait_until(lambda: "table=outbox_event" in log_path.read_text(), timeout=30, message="first daily pass")
        assert not exists(db, gone)
        proc.terminate()
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "retention stopped" in log_path.read_text()
