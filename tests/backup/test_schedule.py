"""The daily backup round (ADR-016): a base backup and a verify when due, old ones pruned with their WAL;
/metrics exports their freshness."""

from __future__ import annotations

from datetime import timedelta

import pytest

from nexo.backup import archive, base, schedule
from nexo.ops.exposition import BackupCollector
from tests.backup.kept import now

pytestmark = [pytest.mark.slow, pytest.mark.no_db]


def test_the_round_backs_up_and_verifies_once_a_day_and_prunes_past_the_kept_days(kept, monkeypatch):
    settings = kept.settings
    assert schedule.embedded_in_use(settings)
    first = schedule.run_round(settings, kept.url)
    assert first["verified"] is True and first["pruned"] == [] and str(first["taken"]).startswith("base-")
    assert schedule.run_round(settings, kept.url) == {"pruned": []}  # nothing due an instant later

    kept.orders(1)
    kept.archive_now()
    oldest = archive.segments(settings.wal_dir)[0].name
    later = now() + timedelta(days=settings.keep_days + 1)
    second = schedule.run_round(settings, kept.url, now=later)
    assert second["pruned"] == [first["taken"]] and second["verified"] is True
    assert [b.name for b in base.all_backups(settings)] == [second["taken"]]
    newest_start = archive.Segment.parse(base.all_backups(settings)[0].start_wal)
    remaining = archive.segments(settings.wal_dir)
    assert remaining and all(s.number >= newest_start.number for s in remaining) and oldest not in {s.name for s in remaining}

    monkeypatch.setenv("NEXO_DATA_DIR", str(kept.data_dir))
    families = {f.name: f.samples for f in BackupCollector().collect()}
    assert families["nexo_backup_last_verify_ok"][0].value == 1
    for name in (
        "nexo_backup_last_verified_timestamp",
        "nexo_backup_wal_archived_timestamp",
        "nexo_backup_newest_base_timestamp",
    ):
        assert abs(families[name + "_seconds"][0].value - now().timestamp()) < 120, name
    assert families["nexo_backup_max_lag_seconds"][0].value == 60
