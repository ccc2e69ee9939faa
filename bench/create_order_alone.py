"""create_order N times in one thread with no wake-up: the CPU one order costs Python and its Postgres backend.

Run from the root of any tree since f7a5da0 (it uses only create_order, the commands and Database, whose
shapes have not changed), on a throw-away database:

    N=2000 .venv/bin/python scripts/stack.py exec --throwaway -- .venv/bin/python bench/create_order_alone.py

It prints the Python CPU (time.process_time) and the Postgres backend's CPU (/proc, the one pooled
connection's backend) per order. To compare two trees (a budget, ADR-011), export the older one with
`git archive <commit> | tar -x -C /tmp/old`, link this tree's .venv into it, copy this file there and
alternate runs of the two. Under callgrind the Python side becomes an instruction count, the same from run
to run whatever the machine is doing; run it for N=50 and N=550 and divide the difference by 500, so the
start-up cancels out:

    N=550 .venv/bin/python scripts/stack.py exec --throwaway -- \\
        valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python bench/create_order_alone.py

DROP=index,index drops those indexes first (what an index costs an order).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.getcwd())
from bench.cpu import tree_seconds  # noqa: E402
from nexo.db import Database  # noqa: E402
from nexo.orders import commands, service  # noqa: E402


def main() -> int:
    env = {**os.environ, "NEXO_ENV": "test"}
    subprocess.run([sys.executable, "-m", "flask", "--app", "app", "demo", "load", "--if-empty"], env=env, check=True)
    db = Database(os.environ["DATABASE_URL"], max_size=1, timeout_s=60, name="create-order-alone")
    with db.pool.connection() as conn:
        client_id = conn.execute("SELECT id FROM client WHERE name = 'Corralón del Sur'").fetchone()["id"]
        salesperson = conn.execute("SELECT id FROM app_user WHERE username = 'vendedor1'").fetchone()["id"]
        # Room for every order of the run: a rejection for stock or credit would measure another path.
        conn.execute("UPDATE stock_level SET on_hand = 100000000")
        conn.execute("UPDATE client SET credit_limit_cents = 10000000000000 WHERE id = %s", [client_id])
        for index in filter(None, os.environ.get("DROP", "").split(",")):
            conn.execute(f"DROP INDEX {index}")
        backend = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
        conn.commit()
    count = int(os.environ.get("N", "2000"))
    lines = (commands.OrderLineRequest("TOR-010", 1), commands.OrderLineRequest("COR-200", 1))
    postgres_before, python_before = tree_seconds(backend), time.process_time()
    for _ in range(count):
        cmd = commands.CreateOrder(
            request_id=uuid.uuid4(), client_id=client_id, warehouse_id="CEN", lines=lines, salesperson_id=salesperson
        )
        result = service.create_order(db, cmd, None)
        assert isinstance(result, commands.Confirmed), result
    python_ms = (time.process_time() - python_before) / count * 1e3
    postgres_ms = (tree_seconds(backend) - postgres_before) / count * 1e3
    with db.pool.connection() as conn:  # one connection all along, or the backend's CPU is not the orders'
        assert conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"] == backend, "the pool reconnected"
    db.close()
    print(f"{count} orders: CPU ms per order, Python {python_ms:.3f} · Postgres backend {postgres_ms:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
