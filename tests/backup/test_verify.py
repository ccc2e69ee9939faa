"""`flask backup verify` restores a backup and holds it to Nexo's invariants; a changed byte or a missing
WAL segment fails it, naming what (ADR-016). `backup dump` / `restore-dump` round-trip a database."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

from nexo.backup import archive, postgres, status, verify
from nexo.db import Database
from nexo.deadletters import retention
from nexo.ops.exposition import BackupCollector
from nexo.settings import write_run_state
from tests.backup.kept import KeptDataDir

pytestmark = [pytest.mark.slow, pytest.mark.no_db]


@pytest.fixture(scope="module")
def backed_up(template):
    """A kept cluster with a base backup, orders after it and two more archived segments."""
    place = KeptDataDir(template=template)
    place.start()
    place.name = place.make("backup").stdout.strip().splitlines()[-1]
    place.orders(3)
    place.archive_now()
    place.orders(1)
    place.archive_now()
    yield place
    place.close()


def last_line(result) -> str:
    return result.stdout.strip().splitlines()[-1]


def test_verify_restores_the_backup_and_finds_nexo_whole(backed_up):
    result = backed_up.flask("verify", backed_up.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert last_line(result) == f"verdict: {backed_up.name} restores and holds ({result.stdout.count(chr(10)) - 1} checks)"
    for step in ("pg_verifybackup", "pg_amcheck", "migrations", "reserved <= on_hand", "CONFIRMADO", "audit log"):
        assert f"ok    {step}" in result.stdout or step in result.stdout
    # Backup files are their owner's alone: the archive, the base backups, their records.
    settings = backed_up.settings
    for directory in (settings.backup_dir, settings.wal_dir, settings.base_dir, settings.base_dir / backed_up.name):
        assert directory.stat().st_mode & 0o077 == 0, directory
    for path in [*settings.wal_dir.iterdir(), *(settings.base_dir / backed_up.name).iterdir()]:
        assert path.stat().st_mode & 0o077 == 0, path
    listed = backed_up.flask("list").stdout
    assert listed.startswith(backed_up.name) and "verified" in listed and " ok" in listed and "window" in listed


def test_verify_fails_on_a_backup_with_one_byte_changed(backed_up):
    copy_name = backed_up.name + "-altered"
    copy = backed_up.settings.base_dir / copy_name
    shutil.copytree(backed_up.settings.base_dir / backed_up.name, copy, symlinks=True)
    meta = copy / "backup.json"
    meta.write_text(meta.read_text().replace(f'"{backed_up.name}"', f'"{copy_name}"'))
    try:
        victim = max((copy / "data" / "base").rglob("*"), key=lambda p: p.stat().st_size if p.is_file() else 0)
        with open(victim, "r+b") as f:
            f.seek(victim.stat().st_size // 2)
            byte = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([byte[0] ^ 0x01]))
        result = backed_up.flask("verify", copy_name)
        assert result.returncode == 1
        assert "FAIL  pg_verifybackup" in result.stdout and victim.name in result.stdout
        assert last_line(result) == f"verdict: {copy_name} FAILED: pg_verifybackup"
    finally:
        shutil.rmtree(copy)


def test_verify_fails_on_a_missing_wal_segment_and_names_it(backed_up):
    start = archive.Segment.parse(_start_wal(backed_up))
    gone = archive.segment_name(start.timeline, start.number + 1)
    path = backed_up.settings.wal_dir / (gone + archive.SUFFIX)
    aside = path.with_name(gone + ".aside")
    path.rename(aside)
    try:
        result = backed_up.flask("verify", backed_up.name)
        assert result.returncode == 1
        assert f"missing WAL segment(s) in {backed_up.settings.wal_dir}: {gone}" in result.stdout
        assert last_line(result) == f"verdict: {backed_up.name} FAILED: archive"
    finally:
        aside.rename(path)


def _start_wal(place) -> str:
    return json.loads((place.settings.base_dir / place.name / "backup.json").read_text())["start_wal"]


def test_a_dump_restores_into_an_empty_database_and_not_into_a_nexo_one(backed_up):
    # With no environment but NEXO_DATA_DIR, the command finds the servers through make run's record.
    write_run_state(backed_up.data_dir, {"NEXO_ENV": "demo", "DATABASE_URL": backed_up.url, "REDIS_URL": "redis://127.0.0.1:1/0"})
    assert oct((backed_up.data_dir / "run-state.json").stat().st_mode & 0o777) == "0o600"
    dumped = backed_up.flask("dump", bare=True)
    assert dumped.returncode == 0, dumped.stdout + dumped.stderr
    path = last_line(dumped)
    assert Path(path).stat().st_mode & 0o077 == 0
    assert path.startswith(str(backed_up.settings.backup_dir / "dumps")) and path.endswith(".dump")
    with psycopg.connect(backed_up.url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE nexo_copy")
    copy_url = backed_up.url.replace("/postgres?", "/nexo_copy?", 1)
    restored = backed_up.flask("restore-dump", path, "--into", copy_url)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    count = (
        "SELECT (SELECT count(*) FROM orders) AS o, (SELECT count(*) FROM outbox_event) AS e,"
        " (SELECT count(*) FROM audit_log) AS a"
    )
    with psycopg.connect(backed_up.url) as a, psycopg.connect(copy_url) as b:
        assert a.execute(count).fetchone() == b.execute(count).fetchone()
    again = backed_up.flask("restore-dump", path, "--into", copy_url)
    assert again.returncode == 2 and "already holds Nexo's tables" in again.stdout


def test_a_killed_verify_leaves_no_server_behind_once_the_next_one_sweeps(template):
    # pg_ctl detaches the scratch server from the verify's process group: a verify killed mid-way left it
    # running. Here: a scratch cluster of a verify whose process is gone, its server up.
    dead = subprocess.Popen(["true"])
    dead.wait()
    scratch = Path(tempfile.mkdtemp(prefix=verify.SCRATCH_PREFIX, dir=str(verify.SCRATCH_ROOT)))
    try:
        (scratch / "owner").write_text(str(dead.pid))
        data = scratch / "data"
        shutil.copytree(template / "postgres", data, symlinks=True)
        (data / ".handle_pids.json").unlink(missing_ok=True)
        postgres.give_to_server(scratch)
        options = f"-c listen_addresses='' -k {scratch} -p {postgres.free_port()} -c archive_mode=off"
        log = str(scratch / "server.log")  # without a log file the server would hold our pipe open
        postgres.run(
            [postgres.tool("pg_ctl"), "-D", str(data), "-l", log, "-o", options, "-w", "start"], as_server=True, timeout=60
        )
        assert postgres.postmaster_running(data)
        pid = int((data / "postmaster.pid").read_text().split()[0])
        # Any verify on this machine sweeps it (another test run's may have been first): either way it is gone.
        verify.sweep_abandoned_scratch()
        assert not scratch.exists()
        assert postgres.wait_until(lambda: not postgres.pid_alive(pid), 10)  # it removes its pid file, then exits
    finally:
        if scratch.exists() and postgres.postmaster_running(scratch / "data"):
            postgres.run([postgres.tool("pg_ctl"), "-D", str(scratch / "data"), "-m", "immediate", "stop"], as_server=True)
        shutil.rmtree(scratch, ignore_errors=True)


def test_a_missing_newest_segment_fails_verify_and_shows_on_ops_metrics(backed_up):
    # The archive alone cannot see a gap at its end (nothing after it): the server's word on how far its
    # finished WAL reaches can. Here the newest archived segment is lost.
    newest = archive.segments(backed_up.settings.wal_dir)[-1]
    current = backed_up.query("SELECT pg_walfile_name(pg_current_wal_lsn()) AS f")[0]["f"]
    assert archive.Segment.parse(current).number > newest.number  # finished: the server is past it
    path = backed_up.settings.wal_dir / newest.file
    aside = path.with_name(newest.name + ".aside")
    path.rename(aside)
    try:
        result = backed_up.flask("verify", backed_up.name)
        assert result.returncode == 1, result.stdout
        assert f"missing WAL segment(s) in {backed_up.settings.wal_dir}: {newest.name};" in result.stdout
        assert "the end of the WAL the server finished" in result.stdout
        assert last_line(result) == f"verdict: {backed_up.name} FAILED: archive"

        with psycopg.connect(backed_up.url, autocommit=True) as conn:
            seen = status.read_status(backed_up.settings, conn)
        assert seen.wal_missing == [newest.name] and seen.wal_end_checked and seen.archiver_failing is False
        db = Database(backed_up.url, max_size=1, name="backup-metrics")
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("NEXO_DATA_DIR", str(backed_up.data_dir))
                families = {f.name: f.samples for f in BackupCollector(db).collect()}
        finally:
            db.close()
        assert families["nexo_backup_wal_missing_segments"][0].value == 1
        assert families["nexo_backup_archiver_failing"][0].value == 0
    finally:
        aside.rename(path)
    with psycopg.connect(backed_up.url, autocommit=True) as conn:
        assert status.read_status(backed_up.settings, conn).wal_missing == []


def test_a_segment_waiting_for_a_failing_archiver_is_lag_not_a_gap(backed_up):
    # archive_command failing (a full or missing NEXO_BACKUP_DIR): the finished segment stays waiting in
    # the server (.ready) and is archived once the command works again; meanwhile /ops says it is failing.
    good = backed_up.query("SHOW archive_command")[0]["archive_command"]

    def set_command(command: str) -> None:
        with psycopg.connect(backed_up.url, autocommit=True) as conn:
            conn.execute(f"ALTER SYSTEM SET archive_command = {archive.quote_literal(command)}")
            conn.execute("SELECT pg_reload_conf()")

    set_command("false")
    try:
        backed_up.orders(1)
        waiting = backed_up.query("SELECT pg_walfile_name(pg_switch_wal()) AS f")[0]["f"]

        def failed():
            with psycopg.connect(backed_up.url, autocommit=True) as conn:
                seen = status.read_status(backed_up.settings, conn)
            return seen if seen.archiver_failing else None

        seen = postgres.wait_until(failed, 30)
        assert seen, "the archiver never reported its failure"
        assert seen.wal_missing == [] and not (backed_up.settings.wal_dir / (waiting + archive.SUFFIX)).exists()
    finally:
        set_command(good)
    assert postgres.wait_until((backed_up.settings.wal_dir / (waiting + archive.SUFFIX)).exists, 90)
    with psycopg.connect(backed_up.url, autocommit=True) as conn:
        seen = status.read_status(backed_up.settings, conn)
    assert seen.wal_missing == [] and seen.archiver_failing is False


def test_verify_accepts_events_the_outbox_retention_purged_and_fails_on_any_other_missing_event(kept):
    # An order entered three days ago whose events were delivered two days ago: OUTBOX_RETENTION_DAYS=1
    # purges them (ADR-010) and the purge's audit row names its cutoff; the order stays CONFIRMADO.
    old, new = kept.orders(2)

    def execute(sql: str, params: list) -> None:
        with psycopg.connect(kept.url, autocommit=True) as conn:
            conn.execute(sql, params)

    execute("UPDATE orders SET created_at = now() - interval '3 days' WHERE id = %s", [old])
    execute(
        "UPDATE outbox_event SET status = 'ENTREGADO', attempts = 1, delivered_at = now() - interval '2 days'"
        " WHERE aggregate_id = %s",
        [old],
    )
    db = Database(kept.url, max_size=2, name="retention")
    try:
        purged = sum(retention.purge_delivered_events(db, destination=d, older_than_days=1) for d in ("fiscal", "warehouse"))
    finally:
        db.close()
    assert purged == 2 and kept.query("SELECT count(*) AS n FROM outbox_event WHERE aggregate_id = %s", [old])[0]["n"] == 0
    name = kept.make("backup").stdout.strip().splitlines()[-1]
    holds = kept.flask("verify", name)
    assert holds.returncode == 0, holds.stdout + holds.stderr

    # An order entered now that lost an event with no purge to explain it is what verify is there to catch.
    execute("DELETE FROM outbox_event WHERE aggregate_id = %s AND destination = 'fiscal'", [new])
    name = kept.make("backup").stdout.strip().splitlines()[-1]
    fails = kept.flask("verify", name)
    assert fails.returncode != 0, fails.stdout
    assert last_line(fails).startswith(f"verdict: {name} FAILED: every CONFIRMADO order has its two events"), fails.stdout
