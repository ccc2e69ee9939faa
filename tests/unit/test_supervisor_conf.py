"""The supervisor configuration is generated from the Procfile; production's copy must not drift (issue 11)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from supervisor.options import ServerOptions

ROOT = Path(__file__).resolve().parents[2]
DEPLOYED = ROOT / "deploy" / "supervisor" / "nexo.conf"
sys.path.insert(0, str(ROOT / "scripts"))
import supervisor_conf  # noqa: E402

pytestmark = pytest.mark.no_db


def test_deployed_config_is_what_the_generator_writes_from_the_procfile_now():
    generated = subprocess.run([sys.executable, "scripts/supervisor_conf.py"], cwd=ROOT, check=True,
                               capture_output=True, text=True).stdout
    assert DEPLOYED.read_text() == generated, (
        "deploy/supervisor/nexo.conf drifted from the Procfile: "
        "run `.venv/bin/python scripts/supervisor_conf.py > deploy/supervisor/nexo.conf`")


def _parse(config: Path) -> dict:
    options = ServerOptions()
    options.realize(args=["-c", str(config)])
    return {group.name: group for group in options.process_group_configs}


def test_deployed_config_is_valid_for_supervisord_and_keeps_the_contract_command_lines(tmp_path):
    main = tmp_path / "supervisord.conf"
    main.write_text(f"[supervisord]\nlogfile={tmp_path}/s.log\npidfile={tmp_path}/s.pid\n"
                    f"[include]\nfiles = {DEPLOYED}\n")
    groups = _parse(main)
    programs = {p.name: p for p in groups["nexo"].process_configs}
    assert set(programs) == {"web", "worker_0", "worker_1", "sweeper", "retention"}     # no sandboxed fake
    assert programs["web"].command.endswith("/.venv/bin/python -m gunicorn -c scripts/gunicorn_conf.py app:app")
    assert programs["worker_0"].command.endswith("/.venv/bin/python -m jobs.worker")
    assert programs["sweeper"].command.endswith("/.venv/bin/python -m jobs.sweeper")
    assert programs["retention"].command.endswith("/.venv/bin/python -m jobs.retention --every 86400")
    assert Path(programs["web"].directory).resolve() == ROOT            # %(here)s/../.. is the checkout
    for program in programs.values():
        assert program.autorestart and program.stopasgroup and program.killasgroup
        assert program.startsecs == supervisor_conf.STARTSECS
    assert "process_events" in groups


def test_make_run_config_has_every_procfile_process_with_the_fakes_storage_under_the_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("FISCAL_PORT", "1234")
    monkeypatch.setenv("WAREHOUSE_PORT", "1235")
    monkeypatch.setenv("NEXO_DATA_DIR", str(tmp_path))
    (tmp_path / "supervisor").mkdir()
    (tmp_path / "logs").mkdir()
    config = tmp_path / "supervisord.conf"
    config.write_text(supervisor_conf.for_run(tmp_path, python=sys.executable, workers=3,
                                              programs=list(supervisor_conf.procfile())))
    programs = {p.name: p for p in _parse(config)["nexo"].process_configs}
    assert {"worker_0", "worker_1", "worker_2", "web", "sweeper", "retention", "fiscal", "warehouse"} == set(programs)
    assert programs["fiscal"].command == f"{sys.executable} -m sandbox.fiscal --port 1234 --db {tmp_path}/fiscal.sqlite3"
    assert programs["web"].stdout_logfile == f"{tmp_path}/logs/web.log"
