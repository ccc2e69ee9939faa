"""Order entry throughput: create_order called directly, and the same order through HTTP: the form (CSRF)
and the Orders API (bearer key, Idempotency-Key)."""

from __future__ import annotations

import random
import uuid

from bench.api_client import Integration
from bench.data import WAREHOUSE, BenchData
from bench.load import Measurement, closed_loop
from bench.web import Salesperson
from nexo.db import Database
from nexo.extensions import make_redis
from nexo.orders import commands, service
from nexo.outbox.wakeup import Wakeup
from nexo.settings import Settings


def direct(database_url: str, data: BenchData, threads: int, duration_s: float, warmup_s: float, meter=None) -> Measurement:
    """`threads` threads calling create_order back to back with 2-line orders; pool max_size = threads."""
    # timeout: a thread waiting for a connection is measured waiting, never failed by the pool.
    db = Database(database_url, max_size=threads, timeout_s=60, name="bench-direct")
    db.pool.wait(timeout=30)
    settings = Settings.from_env()  # RELAY_WAKEUP=off for the diagnostic run (bench/__main__.py)
    ring = Wakeup(make_redis(settings.redis_url), settings, in_background=True)  # as the web tier rings it

    def order(_state, rng: random.Random):
        i = rng.randrange(len(data.salesperson_ids))
        cmd = commands.CreateOrder(
            request_id=uuid.uuid4(),
            client_id=rng.choice(data.client_ids),
            warehouse_id=WAREHOUSE,
            lines=tuple(commands.OrderLineRequest(sku, q) for sku, q in data.order_lines(rng)),
            salesperson_id=data.salesperson_ids[i],
        )
        result = service.create_order(db, cmd, ring)
        return isinstance(result, commands.Confirmed), f"outcome {result.outcome} {','.join(getattr(result, 'reasons', ()))}"

    try:
        return closed_loop(f"direct x{threads}", threads, lambda i: None, order, duration_s, warmup_s, meter)
    finally:
        db.close()


def http(people: list[Salesperson], data: BenchData, clients: int, duration_s: float, warmup_s: float, meter=None) -> Measurement:
    """`clients` logged-in salespeople posting the order form back to back; anything but a 303 is an error."""

    def order(person: Salesperson, rng: random.Random):
        status, _ = person.post_order(rng.choice(data.client_ids), data.order_lines(rng))
        return status == 303, f"HTTP {status}"

    return closed_loop(f"http x{clients}", clients, lambda i: people[i], order, duration_s, warmup_s, meter)


def api(
    integrations: list[Integration], data: BenchData, clients: int, duration_s: float, warmup_s: float, meter=None
) -> Measurement:
    """`clients` integrations posting JSON orders back to back, each with a fresh Idempotency-Key; success = 201."""

    def order(integration: Integration, rng: random.Random):
        status, _ = integration.post_order(rng.choice(data.client_ids), data.order_lines(rng))
        return status == 201, f"HTTP {status}"

    return closed_loop(f"api x{clients}", clients, lambda i: integrations[i], order, duration_s, warmup_s, meter)
