"""The supervisor configuration is generated from the Procfile; production's copy must not drift (ADR-013)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from supervisor.options import ServerOptions

ROOT = Path(__file__).resolve().parents[2]
DEPLOYED = ROOT / "deploy" / "supervisor" / "nexo.conf"
sys.path.insert(0, str(ROOT / "scripts"))
import stack  # noqa: E402
import supervisor_conf  # noqa: E402

pytestmark = pytest.mark.no_db


def test_deployed_config_is_what_the_generator_writes_from_the_procfile_now():
    generated = subprocess.run(
        [sys.executable, "scripts/supervisor_conf.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    assert DEPLOYED.read_text() == generated, (
        "deploy/supervisor/nexo.conf drifted from the Procfile: "
        "run `.venv/bin/python scripts/supervisor_conf.py > deploy/supervisor/nexo.conf`"
    )


def _parse(config: Path) -> dict:
    options = ServerOptions()
    options.realize(args=["-c", str(config)])
    return {group.name: group for group in options.process_group_configs}


def test_deployed_config_is_valid_for_supervisord_and_keeps_the_contract_command_lines(tmp_path):
    main = tmp_path / "supervisord.conf"
    main.write_text(f"[supervisord]\nlogfile={tmp_path}/s.log\npidfile={tmp_path}/s.pid\n[include]\nfiles = {DEPLOYED}\n")
    groups = _parse(main)
    programs = {p.name: p for p in groups["nexo"].process_configs}
    assert set(programs) == {"web", "worker_0", "worker_1", "sweeper", "retention"}  # no sandboxed fake
    assert programs["web"].command.endswith("/.venv/bin/python -m gunicorn -c scripts/gunicorn_conf.py app:app")
    assert programs["worker_0"].command.endswith("/.venv/bin/python -m jobs.worker")
    assert programs["sweeper"].command.endswith("/.venv/bin/python -m jobs.sweeper")
    assert programs["retention"].command.endswith("/.venv/bin/python -m jobs.retention --every 86400")
    assert Path(programs["web"].directory).resolve() == ROOT  # %(here)s/../.. is the checkout
    for program in programs.values():
        assert program.autorestart and program.stopasgroup and program.killasgroup
        assert program.startsecs == supervisor_conf.STARTSECS
    assert "process_events" in groups


def _make_run_config(data_dir: Path, monkeypatch, python: str = sys.executable, **kwargs) -> dict:
    monkeypatch.setenv("FISCAL_PORT", "1234")
    monkeypatch.setenv("WAREHOUSE_PORT", "1235")
    monkeypatch.setenv("NEXO_SANDBOX_DIR", str(data_dir))
    (data_dir / "supervisor").mkdir(parents=True)
    (data_dir / "logs").mkdir()
    config = data_dir / "supervisord.conf"
    config.write_text(
        supervisor_conf.for_run(
            data_dir,
            python=python,
            workers=3,
            programs=list(supervisor_conf.procfile()),
            socket_path=data_dir / "s.sock",
            **kwargs,
        )
    )
    groups = _parse(config)
    assert groups["sandbox"].priority < groups["nexo"].priority  # the fakes stop after the relay's programs
    return {p.name: p for g in ("nexo", "sandbox") for p in groups[g].process_configs}


def test_make_run_config_has_every_procfile_process_with_the_fakes_storage_in_the_sandbox_dir(tmp_path, monkeypatch):
    programs = _make_run_config(tmp_path, monkeypatch)
    assert {"worker_0", "worker_1", "worker_2", "web", "sweeper", "retention", "fiscal", "warehouse"} == set(programs)
    assert shlex.split(programs["fiscal"].command) == [
        sys.executable,
        "-m",
        "sandbox.fiscal",
        "--port",
        "1234",
        "--db",
        f"{tmp_path}/fiscal.sqlite3",
    ]
    assert programs["web"].stdout_logfile == f"{tmp_path}/logs/web.log"


def test_a_checkout_or_data_dir_with_a_space_or_a_percent_sign_still_runs(tmp_path, monkeypatch):
    # Arguments were once joined with " " and "%" was not escaped; supervisord then
    # refused the file ("%" starts an expansion) or split the path at the space.
    odd = tmp_path / "mis datos 100%"
    monkeypatch.setattr(supervisor_conf, "ROOT", tmp_path / "check out%s")
    programs = _make_run_config(odd, monkeypatch, python="/opt/mi python%/bin/python")
    assert shlex.split(programs["warehouse"].command) == [
        "/opt/mi python%/bin/python",
        "-m",
        "sandbox.warehouse",
        "--port",
        "1235",
        "--db",
        f"{odd}/warehouse.sqlite3",
    ]
    assert programs["web"].directory == f"{tmp_path}/check out%s"
    assert programs["web"].stdout_logfile == f"{odd}/logs/web.log"


def test_a_stop_waits_for_the_relay_programs_attempt_in_flight(tmp_path, monkeypatch):
    deployed = {p.name: p for p in _parse_deployed(tmp_path)["nexo"].process_configs}
    assert deployed["worker_0"].stopwaitsecs == deployed["sweeper"].stopwaitsecs == 7  # 5 s default + 2
    assert deployed["web"].stopwaitsecs == deployed["retention"].stopwaitsecs == supervisor_conf.STOPWAITSECS
    programs = _make_run_config(tmp_path / "run", monkeypatch, delivery_timeout_s=3.5)
    assert programs["worker_2"].stopwaitsecs == programs["sweeper"].stopwaitsecs == 6
    assert programs["fiscal"].stopwaitsecs == supervisor_conf.STOPWAITSECS


def _parse_deployed(tmp_path: Path, text: str | None = None) -> dict:
    included = DEPLOYED
    if text is not None:
        included = tmp_path / "deploy" / "supervisor" / "nexo.conf"
        included.parent.mkdir(parents=True)
        included.write_text(text)
    main = tmp_path / "supervisord.conf"
    main.write_text(f"[supervisord]\nlogfile={tmp_path}/s.log\npidfile={tmp_path}/s.pid\n[include]\nfiles = {included}\n")
    return _parse(main)


def test_the_production_config_takes_the_account_to_run_as_from_an_option(tmp_path):
    text = subprocess.run(
        [sys.executable, "scripts/supervisor_conf.py", "--user", "root"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    groups = _parse_deployed(tmp_path, text)
    configs = [*groups["nexo"].process_configs, *groups["process_events"].process_configs]
    assert configs and all(c.uid == 0 for c in configs)
    assert "user=" not in DEPLOYED.read_text()


def test_the_fakes_persist_only_with_the_embedded_postgres(tmp_path):
    # CONTRACT: an outside test giving DATABASE_URL counts GET /__sandbox/effects against a fresh database.
    env = {"DATABASE_URL": "postgresql://somewhere/fresh"}
    with stack.sandbox_dir(env, tmp_path) as path:
        assert Path(path).is_dir() and not Path(path).is_relative_to(tmp_path)
        assert env["NEXO_SANDBOX_DIR"] == path
    assert not Path(path).exists()
    env = {}
    with stack.sandbox_dir(env, tmp_path) as path:
        assert path == env["NEXO_SANDBOX_DIR"] == str(tmp_path)
    assert tmp_path.exists()


def test_supervisords_socket_path_stays_short_whatever_the_data_dir():
    with stack.socket_dir() as path:
        assert len(str(path / "supervisor.sock")) < 100
