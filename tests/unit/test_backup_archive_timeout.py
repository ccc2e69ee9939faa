"""archive_timeout leaves the archiver room inside BACKUP_MAX_LAG_S (ADR-016)."""

from __future__ import annotations

import pytest

from nexo.backup.archive import archive_timeout_s


@pytest.mark.parametrize(("max_lag_s", "timeout_s"), [(1, 1), (2, 1), (5, 4), (10, 9), (60, 54), (600, 540)])
def test_the_segment_switch_comes_a_tenth_early_and_never_below_a_second(max_lag_s, timeout_s):
    assert archive_timeout_s(max_lag_s) == timeout_s
