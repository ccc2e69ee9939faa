"""The hot SKU: 64 salespeople post, at the same instant, an order for the one unit of a SKU (ADR-002)."""

from __future__ import annotations

import threading
import time

from bench import data as bench_data
from bench.web import Salesperson


def run(db, people: list[Salesperson], data: bench_data.BenchData, meter=None) -> dict:
    """Release every buyer with one barrier; exactly one 303, the rest 422 insufficient_stock, nothing else."""
    sku = bench_data.add_hot_sku(db)
    answers: list[tuple[float, float, int, str]] = [None] * len(people)  # type: ignore[list-item]
    gate = threading.Barrier(len(people))

    def buy(i: int) -> None:
        person = people[i]
        gate.wait()
        began = time.perf_counter()
        try:
            # Different clients, as different salespeople would have: only the stock row is contended.
            status, body = person.post_order(data.client_ids[i % len(data.client_ids)], [(sku, 1)])
            reason = "insufficient_stock" if 'data-reason="insufficient_stock"' in body else ""
        except Exception as exc:  # measured as an error
            status, reason = 0, f"{type(exc).__name__}: {exc}"[:200]
        answers[i] = (began, time.perf_counter(), status, reason)

    threads = [threading.Thread(target=buy, args=(i,)) for i in range(len(people))]
    if meter is not None:
        meter.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    cpu = meter.per_op(len(people)) if meter is not None else None
    done = [a for a in answers if a is not None]
    successes = sum(1 for a in done if a[2] == 303)
    refused = sum(1 for a in done if a[2] == 422 and a[3] == "insufficient_stock")
    errors = len(people) - successes - refused
    state = bench_data.hot_sku_state(db, sku)
    return {
        "buyers": len(people),
        "sku": sku,
        "settled_s": round(max(a[1] for a in done) - min(a[0] for a in done), 3) if done else None,
        "successes": successes,
        "insufficient_stock": refused,
        "errors": errors,
        "error_samples": sorted(
            {f"HTTP {a[2]} {a[3]}".strip() for a in done if not (a[2] == 303 or (a[2] == 422 and a[3] == "insufficient_stock"))}
        )[:5],
        "stock_after": {"on_hand": state["on_hand"], "reserved": state["reserved"], "orders": state["orders"]},
        "cpu_ms_per_answer": cpu,
    }
