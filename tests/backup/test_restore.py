"""`make restore AT=…`: the wrong DELETE undone to the second, and the refusals that touch nothing (ADR-016)."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import timedelta

import pytest

from nexo.backup import archive, postgres
from tests.backup.kept import KeptDataDir, now

pytestmark = [pytest.mark.slow, pytest.mark.no_db]

# A wrong DELETE of every order, as typed into psql: what references an order goes first (the foreign keys).
WRONG_DELETE = """
BEGIN;
DELETE FROM idempotency_keys; DELETE FROM order_line; DELETE FROM stock_reservation;
UPDATE outbox_event SET depends_on = NULL; DELETE FROM outbox_event; DELETE FROM orders;
COMMIT;
"""


def psql(kept, sql: str) -> None:
    """sql through psql, as a person types it."""
    with postgres.client_conninfo(kept.url) as conninfo:
        subprocess.run(
            [postgres.tool("psql"), "-v", "ON_ERROR_STOP=1", "-d", conninfo, "-c", sql], check=True, capture_output=True
        )


def test_a_wrong_delete_is_undone_by_restoring_to_just_before_it(kept):
    name = kept.make("backup").stdout.strip().splitlines()[-1]
    assert name.startswith("base-")
    before = kept.orders(3)  # after the backup: only the archive holds them
    time.sleep(1.1)
    at = now()
    time.sleep(1.1)
    psql(kept, WRONG_DELETE)  # at T, a second after AT
    after = kept.orders(2)
    assert {r["id"] for r in kept.query("SELECT id::text FROM orders")} == set(after)
    kept.archive_now()
    kept.stop()

    result = kept.make("restore", "--at", at.isoformat())
    assert "kept in" in result.stdout and "restored in" in result.stdout, result.stdout
    aside = [p for p in kept.data_dir.iterdir() if p.name.startswith("postgres.before-restore-")]
    assert len(aside) == 1 and (aside[0] / "PG_VERSION").exists()  # set aside, never deleted

    kept.start()  # as the next make run does
    present = {r["id"] for r in kept.query("SELECT id::text FROM orders")}
    assert present == set(before)  # every order committed before T, none after
    # whole: lines, reservations and both events of each order came back with it
    rows = kept.query(
        "SELECT o.id::text, (SELECT count(*) FROM order_line l WHERE l.order_id = o.id) AS lines,"
        " (SELECT count(*) FROM stock_reservation r WHERE r.order_id = o.id) AS reservations,"
        " (SELECT count(*) FROM outbox_event e WHERE e.aggregate_id = o.id) AS events FROM orders o"
    )
    assert all(r["lines"] == 1 and r["reservations"] == 1 and r["events"] == 2 for r in rows), rows
    # the restored cluster archives again, on its new timeline
    assert kept.query("SHOW archive_mode")[0]["archive_mode"] == "on"


def test_restore_refuses_while_the_server_runs_and_outside_the_window_touching_nothing(kept):
    kept.make("backup")
    kept.orders(1)
    running = kept.make("restore", check=False)
    assert running.returncode == 2 and "refused" in running.stdout and "running" in running.stdout
    kept.archive_now()
    kept.stop()
    before = sorted(p.name for p in kept.data_dir.iterdir())

    too_early = (now() - timedelta(days=1)).isoformat()
    outside = kept.make("restore", "--at", too_early, check=False)
    assert outside.returncode == 2 and "outside the window" in outside.stdout
    assert " .. " in outside.stdout  # the window, named
    unzoned = kept.make("restore", "--at", "2026-12-01T10:42:00", check=False)
    assert unzoned.returncode == 2 and "time zone" in unzoned.stdout
    assert sorted(p.name for p in kept.data_dir.iterdir()) == before  # nothing set aside


def test_make_backup_starts_the_server_it_needs_and_restore_refuses_a_backup_of_a_newer_schema(kept):
    kept.stop()
    taken = kept.make("backup")  # make run is not running: it starts the embedded Postgres, then stops it
    assert "starting the embedded Postgres" in taken.stdout
    name = taken.stdout.strip().splitlines()[-1]
    assert not postgres.postmaster_running(kept.settings.pgdata)
    # With no environment but NEXO_DATA_DIR, before any make run, the flask commands find this directory.
    listed = kept.flask("list", bare=True)
    assert listed.returncode == 0 and listed.stdout.startswith(name), listed.stdout + listed.stderr
    meta_path = kept.settings.base_dir / name / "backup.json"
    meta = json.loads(meta_path.read_text())
    meta["schema_version"] = "9999_from_the_future"
    meta_path.write_text(json.dumps(meta))
    before = sorted(p.name for p in kept.data_dir.iterdir())
    refused = kept.make("restore", check=False)
    assert refused.returncode == 2 and "9999_from_the_future" in refused.stdout and "newer" in refused.stdout
    assert sorted(p.name for p in kept.data_dir.iterdir()) == before


def test_a_commit_reaches_the_archive_within_the_lag_right_after_a_start(template):
    # Without the checkpoint at start, the checkpointer slept up to 5 minutes before honouring archive_timeout.
    place = KeptDataDir(template=template, max_lag_s=2)
    try:
        place.start()
        place.orders(1)
        committed = time.monotonic()
        segment = place.query("SELECT pg_walfile_name(pg_current_wal_insert_lsn()) AS f")[0]["f"]
        while not (place.settings.wal_dir / (segment + archive.SUFFIX)).exists():
            # The bound itself, plus a second for a loaded CI machine (archive_timeout is 1 s here: archive.py).
            assert time.monotonic() - committed < 2 + 1, "the commit did not reach the archive within the lag"
            time.sleep(0.1)
    finally:
        place.close()


def test_a_restored_cluster_starts_though_the_backed_up_server_s_pid_now_belongs_to_another_process(kept):
    # make run keeps the server's socket in the data directory, so a base backup carries its socket lock
    # naming the backed-up postmaster. After a reboot that PID may belong to another process of the
    # server's user; Postgres then refuses to start ("lock file already exists") unless restore drops it.
    name = kept.make("backup").stdout.strip().splitlines()[-1]
    copied = kept.settings.base_dir / name / "data"
    locks = list(copied.glob(".s.PGSQL.*.lock"))
    assert locks, sorted(p.name for p in copied.iterdir())  # the hazard is real: the lock is in the backup
    kept.stop()
    with subprocess.Popen(["sleep", "120"], user=postgres.server_user()) as squatter:
        try:
            for lock in locks:
                lines = lock.read_text().splitlines()
                lock.write_text("\n".join([str(squatter.pid), *lines[1:]]) + "\n")
            kept.make("restore")
            assert not list(kept.settings.pgdata.glob(".s.PGSQL.*.lock"))  # the backed-up server's, dropped
            kept.start()  # as the next make run does
            assert kept.query("SELECT count(*) AS n FROM client")[0]["n"] > 0  # the Nexo morning, back
        finally:
            squatter.kill()
