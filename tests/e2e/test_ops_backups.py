"""/ops shows the backups' freshness (ADR-016): the last restore rehearsal and its verdict, the newest base
backup, the newest archived WAL; or that the database's backups are its operator's."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from nexo.backup import base
from tests.ops_helpers import login_client


@pytest.fixture
def marta(app):
    return login_client(app, "marta")


def test_ops_says_who_keeps_the_copies_when_this_host_keeps_none(marta, monkeypatch, tmp_path):
    monkeypatch.setenv("NEXO_BACKUP_DIR", str(tmp_path / "none-here"))
    page = marta.get("/ops").get_data(as_text=True)
    assert 'data-section="backups"' in page and "Este equipo no guarda copias" in page and "backup dump" in page


def test_ops_shows_the_last_rehearsal_its_verdict_and_the_newest_archived_change(marta, monkeypatch, tmp_path):
    backups = tmp_path / "backups"
    path = backups / "base" / "base-20261202T100000Z"
    path.mkdir(parents=True)
    (backups / "wal").mkdir()
    (backups / "wal" / "000000010000000000000003.gz").write_bytes(gzip.compress(b"\0" * 16))
    meta = {
        "name": path.name,
        "kind": "full",
        "started_at": "2026-12-02T10:00:00+00:00",
        "finished_at": "2026-12-02T10:00:02+00:00",
        "pg_version": "18.0",
        "schema_version": "0500_fleet_leases_and_hosts",
        "start_wal": "000000010000000000000002",
        "size_bytes": 1000,
    }
    (path / base.META).write_text(json.dumps(meta))
    base.record_verdict(base.load(path), False, "verdict: FAILED: archive")
    monkeypatch.setenv("NEXO_BACKUP_DIR", str(backups))
    page = marta.get("/ops").get_data(as_text=True)
    assert re.search(r'data-backup="last-verify" data-verified="failed"', page)
    assert "FALLÓ" in page and "(1 guardadas)" in page
    assert "hace" in page.split('data-backup="wal"')[1].split("</tr>")[0]


def test_ops_names_a_hole_in_the_archive(marta, monkeypatch, tmp_path):
    # The newest backup starts at segment 2; 3 is lost, 4 is there. (This app's database is not the cluster
    # the files come from, so only the archive's own continuity is known: the card says so.)
    backups = tmp_path / "backups"
    path = backups / "base" / "base-20261202T100000Z"
    path.mkdir(parents=True)
    (backups / "wal").mkdir()
    for segment in ("000000010000000000000002", "000000010000000000000004"):
        (backups / "wal" / f"{segment}.gz").write_bytes(gzip.compress(b"\0" * 16))
    meta = {
        "name": path.name,
        "kind": "full",
        "started_at": "2026-12-02T10:00:00+00:00",
        "finished_at": "2026-12-02T10:00:02+00:00",
        "pg_version": "18.0",
        "schema_version": "0500_fleet_leases_and_hosts",
        "start_wal": "000000010000000000000002",
        "size_bytes": 1000,
    }
    (path / base.META).write_text(json.dumps(meta))
    monkeypatch.setenv("NEXO_BACKUP_DIR", str(backups))
    page = marta.get("/ops").get_data(as_text=True)
    row = page.split('data-backup="continuity"')[1].split("</tr>")[0]
    assert 'data-missing="1"' in row and 'data-missing-names="000000010000000000000003"' in row
    assert 'data-end-checked="no"' in row and "FALTA 1 tramo de cambios" in row
    (backups / "wal" / "000000010000000000000003.gz").write_bytes(gzip.compress(b"\0" * 16))
    page = marta.get("/ops").get_data(as_text=True)
    row = page.split('data-backup="continuity"')[1].split("</tr>")[0]
    assert 'data-missing="0"' in row and "hasta el último archivado" in row
