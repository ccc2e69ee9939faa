"""scripts/ensure_axe.sh installs the pinned axe-core once and prints where; when it cannot it says why and fails (the
accessibility test then fails with that reason as root or in CI), leaving no half copy behind."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "ensure_axe.sh"
PINNED = re.findall(r"^AXE_CORE_INTEGRITY=(\S+)$", SCRIPT.read_text(), re.MULTILINE)[0]
pytestmark = pytest.mark.no_db
# An npm that logs its call, then installs a package recording `integrity` under --prefix (or fails, offline).
FAKE_NPM = """#!/bin/sh
echo "$@" >> "{log}"
[ "{integrity}" = offline ] && {{ echo "npm error network request failed" >&2; exit 1; }}
while [ "$1" != --prefix ]; do shift; done
mkdir -p "$2/node_modules/axe-core"
echo "axe" > "$2/node_modules/axe-core/axe.min.js"
printf '{{"packages": {{"node_modules/axe-core": {{"integrity": "{integrity}"}}}}}}' > "$2/node_modules/.package-lock.json"
"""


def ensure_axe(tmp_path: Path, integrity: str) -> subprocess.CompletedProcess:
    """Run the script with the fake npm first on PATH and a cache under tmp_path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "npm").write_text(FAKE_NPM.format(log=tmp_path / "npm.log", integrity=integrity))
    (bin_dir / "npm").chmod(0o755)
    return subprocess.run(
        [shutil.which("bash"), str(SCRIPT)],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "NEXO_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_the_pinned_package_is_installed_once_and_its_path_printed(tmp_path):
    first = ensure_axe(tmp_path, PINNED)
    assert first.returncode == 0, first.stderr
    path = Path(first.stdout.splitlines()[-1])
    assert path.read_text() == "axe\n" and path.is_relative_to(tmp_path / "cache")
    again = ensure_axe(tmp_path, PINNED)
    assert again.returncode == 0 and again.stdout == first.stdout
    assert len((tmp_path / "npm.log").read_text().splitlines()) == 1  # the second run found it
    assert "--ignore-scripts" in (tmp_path / "npm.log").read_text()


@pytest.mark.parametrize(
    ("integrity", "reason"),
    [("offline", "npm install failed: offline?"), ("sha512-another", "the registry's tarball is not the pinned one")],
)
def test_an_install_that_fails_says_why_fails_and_leaves_nothing(tmp_path, integrity, reason):
    result = ensure_axe(tmp_path, integrity)
    assert result.returncode == 1
    assert f"could not be installed ({reason})" in result.stderr
    assert list((tmp_path / "cache").iterdir()) == []
