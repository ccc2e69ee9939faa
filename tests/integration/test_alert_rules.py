"""deploy/prometheus/nexo-alerts.yml: valid for promtool, and it names only metrics /metrics exports (ADR-013)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nexo.ops import exposition

RULES_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = RULES_DIR / "nexo-alerts.yml"


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool is missing: install Debian's prometheus (scripts/ensure_promtool.sh, run by make test)")
    return path


def test_promtool_accepts_the_rules_and_their_unit_tests():
    tool = promtool()
    for command in (["check", "rules", str(RULES)], ["test", "rules", str(RULES_DIR / "nexo-alerts.test.yml")]):
        result = subprocess.run([tool, *command], capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stdout + result.stderr


def test_every_metric_the_rules_use_is_exported_by_metrics(db):
    exported = set(re.findall(r"^# TYPE (nexo_\w+) ", exposition.render(db, None).decode(), re.MULTILINE))
    used = set(re.findall(r"\bnexo_\w+", RULES.read_text()))
    assert used and used <= exported, sorted(used - exported)
