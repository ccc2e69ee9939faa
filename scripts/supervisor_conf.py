"""The supervisor configuration of Nexo, generated from the Procfile (the one list of its processes).

`make run` writes a whole supervisord.conf into its data directory with `for_run()`; production
includes `deploy/supervisor/nexo.conf`, which is `python scripts/supervisor_conf.py` (this module's
`for_production()`) and must not drift from it (tests/unit/test_supervisor_conf.py).

Why a generator of our own rather than `honcho export supervisord`: honcho's export writes the
environment of the exporting shell into the file (secrets included), starts each command through
`/bin/sh -c` (so the program's command line is no longer `python -m jobs.worker`, which outside tests
look for), and has no place for what supervision needs here: stopasgroup/killasgroup, the crash-loop
back-off, the event listener that records restarts, and one group so that stopping is concurrent.

Crash loops (ADR-013): a program that dies after STARTSECS of life is restarted at once; one that dies
sooner is retried after 1, 2, … STARTRETRIES seconds (supervisor's BACKOFF), then supervisor gives up
(FATAL). A crash loop is often transient (a database that is still starting), so the event listener
(`python -m jobs.process_events`) starts a FATAL program again after a cool-down: no program stays
FATAL for good, and every such cycle is counted.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROCFILE = ROOT / "Procfile"
GROUP = "nexo"
# The sandboxed fakes stand in for the real fiscal provider and warehouse: production has no such program.
SANDBOX = ("fiscal", "warehouse")
STARTSECS = 3           # alive this long = started; a quicker death is a failed start (back-off)
STARTRETRIES = 5        # failed starts retried after 1, 2, 3, 4, 5 s, then FATAL (then the listener's cool-down)
STOPWAITSECS = 5       # SIGTERM, then SIGKILL of the whole process group: `make run` stops within 15 s
LISTENER = "process_events"


def procfile(path: Path = PROCFILE) -> dict[str, str]:
    """The Procfile's commands by process name, in file order."""
    commands = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, command = line.split(":", 1)
            commands[name.strip()] = command.strip()
    return commands


def supervisor_command(command: str, python: str) -> str:
    """A Procfile command for supervisor: `python` → the given interpreter, `$VAR` → `%(ENV_VAR)s`."""
    argv = shlex.split(command)
    if argv[0] == "python":
        argv[0] = python
    line = " ".join(argv)
    return re.sub(r"\$\{?([A-Z_][A-Z0-9_]*)\}?", r"%(ENV_\1)s", line)


def _program(name: str, command: str, *, python: str, directory: str, workers: int, logs: dict) -> str:
    lines = [f"[program:{name}]", f"command={supervisor_command(command, python)}", f"directory={directory}"]
    if name == "worker":
        lines += [f"numprocs={workers}", "process_name=%(program_name)s_%(process_num)d"]
    lines += ["autostart=true", "autorestart=true", f"startsecs={STARTSECS}", f"startretries={STARTRETRIES}",
              "stopsignal=TERM", f"stopwaitsecs={STOPWAITSECS}", "stopasgroup=true", "killasgroup=true",
              "redirect_stderr=true"]
    lines += [f"{k}={v}" for k, v in logs.items()]
    return "\n".join(lines)


def _listener(*, python: str, directory: str, logs: dict) -> str:
    # stdout is the listener's protocol channel with supervisord; its own log lines go to stderr.
    lines = [f"[eventlistener:{LISTENER}]", f"command={python} -m jobs.process_events", f"directory={directory}",
             "events=PROCESS_STATE_RUNNING,PROCESS_STATE_EXITED,PROCESS_STATE_BACKOFF,PROCESS_STATE_FATAL",
             "buffer_size=100", "autostart=true", "autorestart=true", "startsecs=1", "startretries=1000",
             "stopasgroup=true", "killasgroup=true", "stopwaitsecs=5"]
    lines += [f"{k}={v}".replace("stdout_", "stderr_") for k, v in logs.items()]
    return "\n".join(lines)


def render(commands: dict[str, str], *, python: str, directory: str, workers: int,
           logs_dir: str | None = None) -> str:
    """The [group], [program] and [eventlistener] sections for these Procfile commands."""
    names = list(commands)
    programs = []
    for name in names:
        logs = {"stdout_logfile": f"{logs_dir}/{name}.log", "stdout_logfile_maxbytes": "10MB",
                "stdout_logfile_backups": "2"} if logs_dir else {}
        programs.append(_program(name, commands[name], python=python, directory=directory, workers=workers,
                                 logs=logs))
    listener_logs = ({"stdout_logfile": f"{logs_dir}/{LISTENER}.log", "stdout_logfile_maxbytes": "10MB",
                      "stdout_logfile_backups": "2"} if logs_dir else {})
    sections = [f"[group:{GROUP}]\nprograms={','.join(names)}", *programs,
                _listener(python=python, directory=directory, logs=listener_logs)]
    return "\n\n".join(sections) + "\n"


def for_production(workers: int = 2) -> str:
    """deploy/supervisor/nexo.conf: every Procfile process but the fakes, run from this checkout's .venv."""
    commands = {k: v for k, v in procfile().items() if k not in SANDBOX}
    header = ("; Generated by `python scripts/supervisor_conf.py` from the Procfile: do not edit, regenerate.\n"
              "; Include it from supervisord.conf ([include] files = /path/to/nexo/deploy/supervisor/nexo.conf).\n"
              "; %(here)s is this file's directory: the programs run from the checkout two levels up,\n"
              "; with its .venv. Every program inherits supervisord's environment (README: Production).\n\n")
    return header + render(commands, python="%(here)s/../../.venv/bin/python", directory="%(here)s/../..",
                           workers=workers)


def for_run(data_dir: Path, *, python: str, workers: int, programs: list[str]) -> str:
    """A whole supervisord.conf for `make run`: supervisord in the foreground, its files under data_dir."""
    commands = {k: v for k, v in procfile().items() if k in programs}
    sup = data_dir / "supervisor"
    head = f"""; Written by scripts/stack.py for `make run` (scripts/supervisor_conf.py); rewritten on every start.
[supervisord]
nodaemon=true
logfile={sup}/supervisord.log
logfile_maxbytes=10MB
logfile_backups=2
pidfile={sup}/supervisord.pid
childlogdir={sup}
silent=true

[unix_http_server]
file={sup}/supervisor.sock
chmod=0700

[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

[supervisorctl]
serverurl=unix://{sup}/supervisor.sock

"""
    return head + render(commands, python=python, directory=str(ROOT), workers=workers, logs_dir=str(data_dir / "logs"))


def main() -> int:
    parser = argparse.ArgumentParser(description="Print deploy/supervisor/nexo.conf, generated from the Procfile.")
    parser.add_argument("--workers", type=int, default=2, help="relay workers (numprocs of [program:worker])")
    args = parser.parse_args()
    sys.stdout.write(for_production(args.workers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
