"""deploy/systemd/ is what the generator writes from the Procfile, one unit per program and role (ADR-019)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import supervisor_conf  # noqa: E402
import systemd_units  # noqa: E402

pytestmark = pytest.mark.no_db


def test_committed_units_are_what_the_generator_writes_from_the_procfile_now():
    committed = {p.name: p.read_text() for p in systemd_units.DEPLOY_DIR.iterdir()}
    assert committed == systemd_units.units(**{k: v for k, v in systemd_units.DEFAULTS.items()}), (
        "deploy/systemd drifted from the Procfile: run `.venv/bin/python scripts/systemd_units.py`"
    )


def test_every_program_but_the_fakes_has_a_unit_that_runs_its_procfile_command():
    units = systemd_units.units("/srv/nexo", "nexo", "/etc/nexo/nexo.env")
    for name, command in supervisor_conf.procfile().items():
        unit = systemd_units.unit_name(name)
        if name in supervisor_conf.SANDBOX:
            assert unit not in units
            continue
        text = units[unit]
        assert f"ExecStart=/srv/nexo/.venv/bin/{command}\n" in text  # the command line outside tests look for
        assert "Restart=always" in text and "StartLimitIntervalSec=0" in text and "KillMode=control-group" in text
        assert f"(role {supervisor_conf.ROLE_OF[name]})" in text
    assert "TimeoutStopSec=7" in units["nexo-worker@.service"]  # the attempt in flight finishes (ADR-013)


def test_systemd_accepts_the_units(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is missing (Debian's systemd)")
    env_file = tmp_path / "nexo.env"
    env_file.write_text("NEXO_ENV=demo\n")
    units = systemd_units.units(str(ROOT), "root", str(env_file))
    for name, text in units.items():
        (tmp_path / name.replace("@.service", "@1.service")).write_text(text)
    names = [n.replace("@.service", "@1.service") for n in units]
    result = subprocess.run(
        [analyze, "verify", "--man=no", *names], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr


def test_a_hosts_supervisor_file_has_only_the_programs_of_its_roles():
    text = supervisor_conf.for_production(roles=["relay", "sweeper"])
    assert "[program:worker]" in text and "[program:sweeper]" in text
    assert "[program:web]" not in text and "[program:retention]" not in text
    maintenance = supervisor_conf.programs_of(["maintenance"], supervisor_conf.procfile())
    assert "retention" in maintenance and not {"web", "worker", "sweeper"} & set(maintenance)
    with pytest.raises(SystemExit, match="cron"):
        supervisor_conf.parse_roles("web,cron")
