"""A base backup killed mid-way (SIGKILL: a power cut, the OOM killer) never stands under a backup's name, and
the next backup removes what it left once its writers are gone (ADR-016)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psycopg
import pytest

from nexo.backup import base, postgres
from tests.backup.kept import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.no_db]


def test_a_backup_killed_mid_way_is_never_listed_and_the_next_one_removes_it(kept):
    # Ballast, so that pg_basebackup is caught copying: ~100 MB of rows stored as they are (under 2 kB: no TOAST).
    with psycopg.connect(kept.url, autocommit=True) as conn:
        conn.execute("CREATE TABLE ballast AS SELECT repeat(md5(i::text), 30) AS t FROM generate_series(1, 100000) AS i")
    base_dir = kept.settings.base_dir
    backup = subprocess.Popen(
        [sys.executable, "scripts/stack.py", "backup"],
        cwd=ROOT,
        env=kept.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: make backup and the pg_basebackup it runs
    )
    try:

        def copying():
            return [p for p in base_dir.iterdir() if (p / "data" / "base").is_dir()] if base_dir.is_dir() else []

        assert postgres.wait_until(copying, 60, interval_s=0.02), "pg_basebackup never started copying"
        assert backup.poll() is None, "the backup ended before it could be killed: more ballast"
    finally:
        os.killpg(backup.pid, signal.SIGKILL)  # kill -9 of the whole backup
        backup.wait()
    left = sorted(p.name for p in base_dir.iterdir())
    assert left and all(name.endswith(".partial") for name in left), left  # nothing under a backup's name
    # SIGKILL is delivered, not awaited: pg_basebackup may take a moment to exit (and then be a zombie).
    marks = [m for name in left for m in (base_dir / name / base.WRITERS).read_text().split()]
    assert postgres.wait_until(lambda: not any(postgres.mark_alive(m) for m in marks), 30), marks
    listed = kept.flask("list")
    assert listed.returncode == 0 and "no backups" in listed.stdout, listed.stdout
    assert base.all_backups(kept.settings) == []

    name = kept.make("backup").stdout.strip().splitlines()[-1]
    assert sorted(p.name for p in base_dir.iterdir()) == [name]  # the partial one swept, its disk back
    assert not (base_dir / name / base.WRITERS).exists() and (base_dir / name / base.META).exists()


def test_a_partial_backup_whose_writer_still_runs_is_left_alone(kept, tmp_path):
    # pg_basebackup outlives a SIGKILL of make backup alone: its directory is swept only once it is gone too.
    base_dir = postgres.private_dir(kept.settings.base_dir)
    writer = subprocess.Popen(["sleep", "60"])
    try:
        partial = base_dir / ("base-20261202T000000Z" + base.PARTIAL)
        partial.mkdir()
        gone = subprocess.Popen(["true"])
        gone.wait()
        (partial / base.WRITERS).write_text(f"{postgres.process_mark(gone.pid)}\n{postgres.process_mark(writer.pid)}\n")
        assert base.sweep_partial(kept.settings) == [] and partial.is_dir()
    finally:
        writer.kill()
        writer.wait()
    assert base.sweep_partial(kept.settings) == [partial.name] and not partial.exists()
