"""scripts/ensure_promtool.sh is best effort: offline, make test still runs (the promtool test then skips)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.no_db


def test_an_install_that_cannot_reach_the_package_registry_warns_and_does_not_fail(tmp_path):
    # A PATH with no promtool, root, and an apt-get that fails as it does offline.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("id", "echo 0"), ("apt-get", "echo 'E: could not resolve' >&2; exit 100")):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    for tool in ("timeout", "env"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    result = subprocess.run(
        [shutil.which("bash"), str(ROOT / "scripts" / "ensure_promtool.sh")],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "promtool is missing (apt-get update failed: offline?)" in result.stderr
