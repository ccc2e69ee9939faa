"""`make bench` starts the Procfile's processes itself (bench/stack.py): every command must render there.

A Procfile variable the bench does not provide broke `make bench` once (NEXO_SANDBOX_DIR, when
supervision came, ADR-013) without any test noticing; this is that check.
"""

from __future__ import annotations

import shutil

from bench.stack import Stack


def test_every_procfile_process_renders_with_the_bench_environment():
    stack = Stack({"DATABASE_URL": "postgresql://bench", "REDIS_URL": "redis://bench"})
    try:
        # What start_fakes / start_web add before they start a process.
        env = {**stack.env, "FISCAL_PORT": "1", "WAREHOUSE_PORT": "2", "PORT": "3"}
        for name in stack.commands:
            argv = stack.argv(name, env)
            assert argv and "$" not in " ".join(argv), (name, argv)
    finally:
        shutil.rmtree(stack.workdir, ignore_errors=True)
