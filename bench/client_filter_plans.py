"""How Postgres plans the order list filtered by a client's name, with the clients as words and as ids.

`.venv/bin/python scripts/stack.py exec --throwaway -- .venv/bin/python -m bench.client_filter_plans`: the
growth phase's two databases (bench/growth.py), one after the other: the bench's 200 clients with 60,000 of
their orders (what the order phases leave before the growth phase), then bench/grow.py's first page of
everything, then the years of history (GROW=0 stops before them: 20 s instead of 2 min). On each, the list's
page and its capped count for `cliente=bench 007` (one client, 300 orders), as the list sends them: with the
words inside the statements (finder.where_sql alone) and with the matching clients looked up first
(finder.matching_clients). Per statement: the tables read and how, the planning and execution times
EXPLAIN ANALYZE reports, and the median of ROUND_TRIPS executions on one connection: prepared after five, as
the web process's connections are unless told otherwise, and never prepared, as behind PgBouncer in
transaction mode (ADR-019), where Postgres plans every execution for its parameters.
"""

from __future__ import annotations

import os
import time

import psycopg
from psycopg.rows import dict_row
from werkzeug.datastructures import MultiDict

from bench import data as bench_data
from bench import grow
from bench.growth import FIRST_PAGE
from nexo.db import Database
from nexo.orders import finder

BENCH_ORDERS = 60_000  # the order phases of a full run leave about this many, 300 for each bench client
ROUND_TRIPS = 60


def statements(filters: finder.OrderFilters) -> list[tuple[str, str, dict]]:
    """The list's two statements for these filters (finder.page and finder.count), with their parameters."""
    where, params = finder.where_sql(filters)
    order_by = filters.ordering.order_by()
    return [
        (
            "page",
            f"SELECT {finder._COLUMNS} FROM orders o {finder._JOINS} WHERE {where} ORDER BY {order_by} LIMIT %(limit)s",
            params | {"limit": finder.PAGE_SIZE + 1},
        ),
        (
            "count",
            f"SELECT count(*) AS n FROM (SELECT 1 FROM orders o WHERE {where} ORDER BY {order_by} LIMIT %(cap)s) AS matching",
            params | {"cap": finder.COUNT_CAP + 1},
        ),
    ]


def _tables_read(node: dict) -> list[str]:
    children = [t for child in node.get("Plans", []) for t in _tables_read(child)]
    if "Relation Name" not in node:
        return children
    index = f" ({node['Index Name']})" if "Index Name" in node else ""
    return [f"{node['Node Type']} on {node['Relation Name']}{index}", *children]


def _median_ms(run) -> float:
    times = []
    for _ in range(ROUND_TRIPS):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return sorted(times)[len(times) // 2]


def explain(url: str, stage: str) -> None:
    typed = finder.OrderFilters.from_args(MultiDict({"cliente": "bench 007"}))
    with (
        psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn,
        psycopg.connect(url, autocommit=True, prepare_threshold=None) as unprepared,
    ):
        sizes = conn.execute(
            "SELECT (SELECT count(*) FROM client) AS clients, (SELECT count(*) FROM orders) AS orders"
        ).fetchone()
        print(f"{stage} ({sizes['clients']:,} clients, {sizes['orders']:,} orders)")
        looked_up = finder.matching_clients(conn, typed)
        lookup_ms = _median_ms(lambda: finder.matching_clients(conn, typed))
        print(f"  looking up the clients: median {lookup_ms:.2f} ms, {len(looked_up.client_ids or ())} client(s)")
        for how, filters in (("as words", typed), ("as ids  ", looked_up)):
            for name, sql, params in statements(filters):
                plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params).fetchone()["QUERY PLAN"][0]
                median = _median_ms(lambda: conn.execute(sql, params).fetchall())  # noqa: B023 (called here, not later)
                never = _median_ms(lambda: unprepared.execute(sql, params).fetchall())  # noqa: B023
                print(
                    f"  {how} {name:5}  plan {plan['Planning Time']:5.2f} ms  execution {plan['Execution Time']:6.2f} ms"
                    f"  median round trip {median:5.2f} ms, never prepared {never:5.2f} ms"
                    f"  ·  {' > '.join(_tables_read(plan['Plan']))}",
                    flush=True,
                )


def _grow(db: Database, url: str, volume: grow.Volume, generation: int, waiting: bool) -> None:
    with db.transaction() as tx:
        grow.load(tx.conn, volume, generation=generation, waiting=waiting)
        tx.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        grow.vacuum(conn)


def main() -> None:
    url = os.environ["DATABASE_URL"]
    db = Database(url, max_size=2, timeout_s=30, name="bench")
    data = bench_data.load(db, clients=200, skus=200, salespeople=8, password="nexo-demo")
    bench_data.insert_confirmed_orders(db, data, BENCH_ORDERS)
    _grow(db, url, FIRST_PAGE, generation=1, waiting=True)
    explain(url, "a first page of everything")
    if os.environ.get("GROW", "1") != "0":
        _grow(db, url, grow.FULL, generation=0, waiting=False)
        explain(url, "after the history")
    db.close()


if __name__ == "__main__":
    main()
