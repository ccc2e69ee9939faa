"""scripts/stack.py: where the servers it starts keep their files."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import stack  # noqa: E402

pytestmark = pytest.mark.no_db


def test_servers_kept_without_a_data_dir_go_under_nexo_data_dir(tmp_path, monkeypatch):
    # `stack.py exec -- CMD` without --throwaway passes no data_dir: its servers keep their data where
    # `run` keeps it (a None data_dir once crashed it before any server started).
    started = []

    @contextlib.contextmanager
    def postgres(data_dir, *, throwaway, password=None, backups=None):
        started.append(("postgres", data_dir, throwaway))
        yield "postgresql://postgres@127.0.0.1:1/postgres"

    @contextlib.contextmanager
    def redis(data_dir, *, persist, password=None):
        started.append(("redis", data_dir, persist))
        yield "redis://127.0.0.1:1/0"

    monkeypatch.setattr(stack, "embedded_postgres", postgres)
    monkeypatch.setattr(stack, "embedded_redis", redis)
    env = {"NEXO_DATA_DIR": str(tmp_path / "datos")}
    with stack.services(env, throwaway=False) as filled:
        assert filled["DATABASE_URL"].startswith("postgresql://") and filled["REDIS_URL"].startswith("redis://")
    data = (tmp_path / "datos").resolve()
    assert started == [("postgres", data / "postgres", False), ("redis", data / "redis", True)]
    # Kept servers ask for passwords of their own, kept beside their data, readable by the user only (ADR-018).
    assert sorted(p.name for p in data.glob("*_password")) == ["postgres_password", "redis_password"]
