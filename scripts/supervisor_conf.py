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
import math
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROCFILE = ROOT / "Procfile"
GROUP = "nexo"
# The sandboxed fakes stand in for the real fiscal provider and warehouse: production has no such program.
SANDBOX = ("fiscal", "warehouse")
SANDBOX_GROUP = "sandbox"
SANDBOX_PRIORITY = 100  # below the default 999: started before, stopped after the group of Nexo's own programs
STARTSECS = 3  # alive this long = started; a quicker death is a failed start (back-off)
STARTRETRIES = 5  # failed starts retried after 1, 2, 3, 4, 5 s, then FATAL (then the listener's cool-down)
STOPWAITSECS = 5  # SIGTERM, then SIGKILL of the whole process group: `make run` stops within 15 s
# The relay's programs finish the delivery attempt in flight on SIGTERM (and claim no more): they get the
# HTTP call's whole timeout plus 2 s to record its outcome, so a stop or a deploy never kills an attempt
# mid-flight and spends it (ADR-013). With the default RELAY_DELIVERY_TIMEOUT_S=5 that is 7 s. One attempt
# takes at most the delivery timeout + 0.75 s (RelayCadence.attempt_worst_s, nexo/settings.py): 2 s covers
# it and the process's exit.
RELAY_PROGRAMS = ("worker", "sweeper")
RELAY_STOP_MARGIN_S = 2
DEFAULT_DELIVERY_TIMEOUT_S = 5.0  # nexo/settings.py's default RELAY_DELIVERY_TIMEOUT_S
# Which role (NEXO_ROLES, ADR-019) each Procfile program belongs to; a program of no role listed here
# (the backups' one, say) belongs to maintenance, the role of the jobs that run once for the fleet.
ROLE_OF = {
    "web": "web",
    "worker": "relay",
    "sweeper": "sweeper",
    "retention": "maintenance",
    "backup": "maintenance",
    "fiscal": "fakes",
    "warehouse": "fakes",
}
ALL_ROLES = ("web", "relay", "sweeper", "maintenance", "fakes")
LISTENER = "process_events"
# Besides process states, a TICK every 5 s: the listener checks for FATAL programs on each one, so a
# revival does not depend on a timer that dies with a restarted listener (ADR-013).
LISTENER_EVENTS = ("PROCESS_STATE_RUNNING", "PROCESS_STATE_EXITED", "PROCESS_STATE_BACKOFF", "PROCESS_STATE_FATAL", "TICK_5")


def procfile(path: Path = PROCFILE) -> dict[str, str]:
    """The Procfile's commands by process name, in file order."""
    commands = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, command = line.split(":", 1)
            commands[name.strip()] = command.strip()
    return commands


def programs_of(roles, names) -> list[str]:
    """The Procfile programs (of `names`) a host with these roles runs, in Procfile order."""
    return [name for name in names if ROLE_OF.get(name, "maintenance") in set(roles)]


def parse_roles(text: str) -> list[str]:
    """`web,relay` → ["web", "relay"]; an unknown role stops the generator with its name."""
    roles = [r.strip() for r in text.split(",") if r.strip()]
    unknown = [r for r in roles if r not in ALL_ROLES]
    if unknown or not roles:
        raise SystemExit(f"unknown role(s) {', '.join(unknown) or '(none)'}: use {', '.join(ALL_ROLES)}")
    return roles


def relay_stopwaitsecs(delivery_timeout_s: float) -> int:
    """How long supervisord waits for a relay program after SIGTERM: the attempt in flight, then its outcome."""
    return math.ceil(delivery_timeout_s) + RELAY_STOP_MARGIN_S


def supervisor_command(command: str, python: str) -> str:
    """A Procfile command for supervisor: `python` → the given interpreter, `$VAR` → `%(ENV_VAR)s`.

    Quoted with shlex (supervisor splits its command line the same way) and with `%` doubled, since
    supervisor expands `%(…)s` in it: a checkout path with a space or a `%` still runs. `python` may
    itself be a supervisor expression (`%(here)s/…`): it is kept as is.
    """
    argv = shlex.split(command)
    parts = [_escape(shlex.quote(arg)) for arg in argv]
    if argv[0] == "python":
        parts[0] = python
    line = " ".join(parts)
    return re.sub(r"\$\{?([A-Z_][A-Z0-9_]*)\}?", r"%(ENV_\1)s", line)


def _escape(value: str) -> str:
    """A literal value for supervisor's configuration, where `%` starts an expansion."""
    return value.replace("%", "%%")


def _program(
    name: str, command: str, *, python: str, directory: str, workers: int, logs: dict, delivery_timeout_s: float, user: str | None
) -> str:
    lines = [f"[program:{name}]", f"command={supervisor_command(command, python)}", f"directory={directory}"]
    if name == "worker":
        lines += [f"numprocs={workers}", "process_name=%(program_name)s_%(process_num)d"]
    if user:
        lines.append(f"user={user}")
    stopwait = relay_stopwaitsecs(delivery_timeout_s) if name in RELAY_PROGRAMS else STOPWAITSECS
    lines += [
        "autostart=true",
        "autorestart=true",
        f"startsecs={STARTSECS}",
        f"startretries={STARTRETRIES}",
        "stopsignal=TERM",
        f"stopwaitsecs={stopwait}",
        "stopasgroup=true",
        "killasgroup=true",
        "redirect_stderr=true",
    ]
    lines += [f"{k}={v}" for k, v in logs.items()]
    return "\n".join(lines)


def _listener(*, python: str, directory: str, logs: dict, user: str | None) -> str:
    # stdout is the listener's protocol channel with supervisord; its own log lines go to stderr.
    lines = [
        f"[eventlistener:{LISTENER}]",
        f"command={python} -m jobs.process_events",
        f"directory={directory}",
        f"events={','.join(LISTENER_EVENTS)}",
    ]
    if user:
        lines.append(f"user={user}")
    lines += [
        "buffer_size=100",
        "autostart=true",
        "autorestart=true",
        "startsecs=1",
        "startretries=1000",
        "stopasgroup=true",
        "killasgroup=true",
        "stopwaitsecs=5",
    ]
    lines += [f"{k}={v}".replace("stdout_", "stderr_") for k, v in logs.items()]
    return "\n".join(lines)


def render(
    commands: dict[str, str],
    *,
    python: str,
    directory: str,
    workers: int,
    logs_dir: str | None = None,
    delivery_timeout_s: float = DEFAULT_DELIVERY_TIMEOUT_S,
    user: str | None = None,
) -> str:
    """The [group], [program] and [eventlistener] sections for these Procfile commands."""
    names = list(commands)
    programs = []
    for name in names:
        logs = _logs(logs_dir, name)
        programs.append(
            _program(
                name,
                commands[name],
                python=python,
                directory=directory,
                workers=workers,
                logs=logs,
                delivery_timeout_s=delivery_timeout_s,
                user=user,
            )
        )
    listener_logs = _logs(logs_dir, LISTENER)
    ours, fakes = [n for n in names if n not in SANDBOX], [n for n in names if n in SANDBOX]
    groups = [f"[group:{GROUP}]\nprograms={','.join(ours)}"]
    if fakes:
        # supervisord stops one group at a time, highest priority number first: the fakes stand in for
        # remote systems, so they stop only after the relay's programs have finished the attempts in
        # flight (a fake stopped first would cut them short and spend them).
        groups.append(f"[group:{SANDBOX_GROUP}]\nprograms={','.join(fakes)}\npriority={SANDBOX_PRIORITY}")
    sections = [*groups, *programs, _listener(python=python, directory=directory, logs=listener_logs, user=user)]
    return "\n\n".join(sections) + "\n"


def _logs(logs_dir: str | None, name: str) -> dict:
    if not logs_dir:
        return {}
    # supervisor expands a program's log file name twice (once as any value, once as a log file name).
    logfile = _escape(_escape(f"{logs_dir}/{name}.log"))
    return {"stdout_logfile": logfile, "stdout_logfile_maxbytes": "10MB", "stdout_logfile_backups": "2"}


def for_production(
    workers: int = 2,
    *,
    user: str | None = None,
    delivery_timeout_s: float = DEFAULT_DELIVERY_TIMEOUT_S,
    roles: list[str] | None = None,
) -> str:
    """deploy/supervisor/nexo.conf: every Procfile process but the fakes, run from this checkout's .venv.

    `user`: the account every program runs as when supervisord runs as root (`--user nexo`); the
    committed file has none. `delivery_timeout_s`: production's RELAY_DELIVERY_TIMEOUT_S, which sets
    how long a stop waits for the relay's programs. `roles`: only the programs of these roles (one host
    of a fleet, `--roles web,relay`); the committed file has every role but the fakes.
    """
    wanted = programs_of(roles or [r for r in ALL_ROLES if r != "fakes"], procfile())
    commands = {k: v for k, v in procfile().items() if k not in SANDBOX and k in wanted}
    header = (
        "; Generated by `python scripts/supervisor_conf.py` from the Procfile: do not edit, regenerate.\n"
        "; Include it from supervisord.conf ([include] files = /path/to/nexo/deploy/supervisor/nexo.conf).\n"
        "; %(here)s is this file's directory: the programs run from the checkout two levels up,\n"
        "; with its .venv. Every program inherits supervisord's environment (README: Production).\n\n"
    )
    return header + render(
        commands,
        python="%(here)s/../../.venv/bin/python",
        directory="%(here)s/../..",
        workers=workers,
        delivery_timeout_s=delivery_timeout_s,
        user=user,
    )


def for_run(
    data_dir: Path,
    *,
    python: str,
    workers: int,
    programs: list[str],
    socket_path: Path,
    delivery_timeout_s: float = DEFAULT_DELIVERY_TIMEOUT_S,
) -> str:
    """A whole supervisord.conf for `make run`: supervisord in the foreground, its files under data_dir.

    The control socket is apart (`socket_path`): a Unix socket's path is limited to 107 bytes, which a
    deep NEXO_DATA_DIR would exceed.
    """
    commands = {k: v for k, v in procfile().items() if k in programs}
    sup = _escape(str(data_dir / "supervisor"))
    sock = _escape(str(socket_path))
    python = _escape(shlex.quote(python))
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
file={sock}
chmod=0700

[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

[supervisorctl]
serverurl=unix://{sock}

"""
    return head + render(
        commands,
        python=python,
        directory=_escape(str(ROOT)),
        workers=workers,
        logs_dir=str(data_dir / "logs"),
        delivery_timeout_s=delivery_timeout_s,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description="Print deploy/supervisor/nexo.conf, generated from the Procfile.")
    parser.add_argument("--workers", type=int, default=2, help="relay workers (numprocs of [program:worker])")
    parser.add_argument("--user", help="run every program as this account (when supervisord runs as root)")
    parser.add_argument(
        "--delivery-timeout",
        type=float,
        default=DEFAULT_DELIVERY_TIMEOUT_S,
        metavar="SECONDS",
        help="production's RELAY_DELIVERY_TIMEOUT_S (the relay's programs get it + "
        f"{RELAY_STOP_MARGIN_S} s to stop; default {DEFAULT_DELIVERY_TIMEOUT_S:g})",
    )
    parser.add_argument("--roles", help=f"only the programs of these roles, comma-separated ({', '.join(ALL_ROLES[:-1])})")
    args = parser.parse_args()
    roles = parse_roles(args.roles) if args.roles else None
    sys.stdout.write(for_production(args.workers, user=args.user, delivery_timeout_s=args.delivery_timeout, roles=roles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
