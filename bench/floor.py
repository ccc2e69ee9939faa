"""The floor (docs/performance.md, ADR-011): what the database alone can do of an order and of a relay batch.

pgbench runs bench/order_floor.sql (create_order's statements) and bench/delivery_floor.sql (a relay
batch's claim and record) on the bench's own database and data, with no Python and no HTTP in between.
Direct create_order and the HTTP form are then reported as a share of the order floor, the relay as a
share of the delivery floor: how far each path is from what its SQL costs, on the same machine in the
same run.
"""

from __future__ import annotations

import math
import re
import subprocess
import tempfile
from pathlib import Path

from bench import data as bench_data
from bench.pgbench import binary
from nexo.orders.fingerprint import FINGERPRINT_VERSION
from nexo.outbox import registry
from nexo.outbox.order_events import ORDER_CONFIRMED_EVENTS
from nexo.outbox.relay import MAX_BATCH
from nexo.settings import Settings
from nexo.states import AttemptOutcome, BillingStatus, EventStatus, OrderStatus, ReservationKind

HERE = Path(__file__).resolve().parent
ORDER_SCRIPT = HERE / "order_floor.sql"
DELIVERY_SCRIPT = HERE / "delivery_floor.sql"
ORDER_CLIENTS = 8  # as direct and HTTP @8
DELIVERY_CLIENTS = 4  # 2 workers × 2 destination lanes (ADR-010): the relay's claimants at 2 workers

_TPS = re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)", re.MULTILINE)
_LATENCY = re.compile(r"^latency average = ([0-9.]+) ms", re.MULTILINE)
_PROCESSED = re.compile(r"^number of transactions actually processed: (\d+)", re.MULTILINE)

_PICK_TABLES = ("bench_floor_client", "bench_floor_salesperson", "bench_floor_sku")


def load_picks(db, data: bench_data.BenchData) -> None:
    """The pick tables order_floor.sql draws from by random index: the bench's clients, salespeople, SKUs."""
    with db.transaction() as tx:
        for table in _PICK_TABLES:
            tx.execute(f"DROP TABLE IF EXISTS {table}")
        tx.execute(
            "CREATE TABLE bench_floor_client AS SELECT p.i::integer AS i, c.id, c.name, c.tier"
            " FROM unnest(%s::uuid[]) WITH ORDINALITY AS p(id, i) JOIN client c ON c.id = p.id",
            [data.client_ids],
        )
        tx.execute(
            "CREATE TABLE bench_floor_salesperson AS SELECT p.i::integer AS i, p.id"
            " FROM unnest(%s::bigint[]) WITH ORDINALITY AS p(id, i)",
            [data.salesperson_ids],
        )
        tx.execute(
            "CREATE TABLE bench_floor_sku AS SELECT p.i::integer AS i, pr.id AS product_id, pr.sku, pl.price_cents"
            " FROM unnest(%s::text[]) WITH ORDINALITY AS p(sku, i)"
            " JOIN product pr ON pr.sku = p.sku JOIN price_list pl ON pl.product_id = pr.id",
            [data.skus],
        )
        for table in _PICK_TABLES:
            tx.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (i)")
        tx.commit()
    with db.transaction() as tx:
        for table in _PICK_TABLES:
            tx.execute(f"ANALYZE {table}")
        tx.commit()


def drop_picks(db) -> None:
    """Remove the pick tables (the phases after the floor see the bench's schema as it was)."""
    with db.transaction() as tx:
        for table in _PICK_TABLES:
            tx.execute(f"DROP TABLE IF EXISTS {table}")
        tx.commit()


def order_constants(data: bench_data.BenchData) -> dict[str, str]:
    """The -D variables of order_floor.sql: the draw's ranges and what create_order sends as constants."""
    return {
        "nclients": str(len(data.client_ids)),
        "nsalespeople": str(len(data.salesperson_ids)),
        "nskus": str(len(data.skus)),
        "warehouse": bench_data.WAREHOUSE,
        "fingerprint_version": str(FINGERPRINT_VERSION),
        "confirmed": OrderStatus.CONFIRMADO.value,
        "pending": OrderStatus.PENDIENTE_AUTORIZACION.value,
        "to_invoice": BillingStatus.PENDIENTE_FACTURACION.value,
        "not_invoiced": BillingStatus.NO_APLICA.value,
        "firm": ReservationKind.FIRME.value,
        "event_types": "{" + ",".join(ORDER_CONFIRMED_EVENTS) + "}",
        "destinations": "{" + ",".join(registry.for_event(t).name for t in ORDER_CONFIRMED_EVENTS) + "}",
        "depends_on": "{" + ",".join("NULL" for _ in ORDER_CONFIRMED_EVENTS) + "}",
    }


def delivery_constants(settings: Settings) -> dict[str, str]:
    """The -D variables of delivery_floor.sql: the relay's lease, attempt budget, batch and lanes."""
    return {
        "lease_s": str(settings.relay.lease_s),
        "max_attempts": str(settings.relay.max_attempts),
        "batch": str(MAX_BATCH),
        "worker": "delivery-floor",
        "fiscal": "fiscal",
        "warehouse": "warehouse",
        "invoiced": "order.invoiced",
        # the states the relay binds (the claim's PENDIENTE stays a constant: its partial index)
        "on_its_way": EventStatus.PENDIENTE.value,
        "withdrawn": EventStatus.RETIRADO.value,
        "pending": EventStatus.PENDIENTE.value,
        "no_outcome": AttemptOutcome.SIN_RESULTADO.value,
        "retry": AttemptOutcome.REINTENTO.value,
        "delivered": AttemptOutcome.ENTREGADO.value,
        "billed": BillingStatus.FACTURADO.value,
    }


def run_script(
    url: str,
    script: Path,
    constants: dict[str, str],
    *,
    clients: int,
    seconds: int | None = None,
    transactions: int | None = None,
) -> dict:
    """pgbench -M prepared with one custom script: tps, average latency and transactions processed."""
    limit = ["-T", str(seconds)] if seconds is not None else ["-t", str(transactions)]
    defines = [arg for name, value in constants.items() for arg in ("-D", f"{name}={value}")]
    done = subprocess.run(
        [binary(), "-n", "-M", "prepared", "-c", str(clients), "-j", "2", *limit, *defines, "-f", str(script), url],
        capture_output=True,
        text=True,
        timeout=(seconds or 60) + 300,
        check=False,
    )
    tps, latency, processed = _TPS.search(done.stdout), _LATENCY.search(done.stdout), _PROCESSED.search(done.stdout)
    if done.returncode != 0 or tps is None or processed is None:
        raise RuntimeError(f"pgbench {script.name} failed: {(done.stderr or done.stdout).strip()[-800:]}")
    return {
        "tps": round(float(tps.group(1)), 1),
        "latency_ms": round(float(latency.group(1)), 2) if latency else None,
        "transactions": int(processed.group(1)),
    }


def order_floor(db, url: str, data: bench_data.BenchData, seconds: int, meter=None) -> dict:
    """order_floor.sql at 8 clients for `seconds`; orders/s, how many committed CONFIRMADO, and (meter, a
    bench.cpu.CpuMeter) the CPU of each part per order."""
    load_picks(db, data)
    try:
        before = _count(db, "SELECT count(*) AS n FROM orders WHERE status = 'CONFIRMADO'")
        if meter is not None:
            meter.start()
        ran = run_script(url, ORDER_SCRIPT, order_constants(data), clients=ORDER_CLIENTS, seconds=seconds)
        cpu = meter.per_op(ran["transactions"]) if meter is not None else None
        confirmed = _count(db, "SELECT count(*) AS n FROM orders WHERE status = 'CONFIRMADO'") - before
    finally:
        drop_picks(db)
    return {
        "clients": ORDER_CLIENTS,
        "seconds": seconds,
        "orders_per_s": ran["tps"],
        "latency_ms": ran["latency_ms"],
        "transactions": ran["transactions"],
        "confirmed": confirmed,
        "cpu_ms_per_order": cpu,
    }


def batch_written_in(script: Path, scratch: Path, batch: int) -> Path:
    """A copy of delivery_floor.sql whose claims have their LIMIT written in, as the relay's claim_sql has
    (a bound LIMIT made Postgres plan the claim again on every call, ADR-008)."""
    text = script.read_text()
    assert text.count("LIMIT :batch::integer") == 2, "both lanes' claims bound their batch"
    written = scratch / script.name
    written.write_text(text.replace("LIMIT :batch::integer", f"LIMIT {int(batch)}"))
    return written


def delivery_floor(db, url: str, data: bench_data.BenchData, events: int, meter=None) -> dict:
    """delivery_floor.sql at 4 clients until `events` pre-created events are ENTREGADO; events/s, and (meter)
    the CPU of each part per event."""
    bench_data.retire_pending_events(db)
    ids = bench_data.insert_confirmed_orders(db, data, events // 2)
    # Enough rounds for every lane to drain its destination's half; the last, near-empty ones are cheap.
    rounds = math.ceil(len(ids) / DELIVERY_CLIENTS / MAX_BATCH) + 2
    if meter is not None:
        meter.start()
    with tempfile.TemporaryDirectory(prefix="nexo-floor-") as scratch:
        script = batch_written_in(DELIVERY_SCRIPT, Path(scratch), MAX_BATCH)
        ran = run_script(url, script, delivery_constants(Settings.from_env()), clients=DELIVERY_CLIENTS, transactions=rounds)
    cpu = meter.per_op(len(ids)) if meter is not None else None
    delivered = _count(db, "SELECT count(*) AS n FROM outbox_event WHERE id = ANY(%s) AND status = 'ENTREGADO'", [ids])
    # pgbench's tps is rounds over its time without connecting: the time is rounds ÷ tps.
    seconds = ran["transactions"] / ran["tps"] if ran["tps"] else None
    return {
        "clients": DELIVERY_CLIENTS,
        "batch": MAX_BATCH,
        "events": len(ids),
        "delivered": delivered,
        "seconds": round(seconds, 2) if seconds else None,
        "events_per_s": round(delivered / seconds, 1) if seconds else None,
        "cpu_ms_per_event": cpu,
    }


def _count(db, sql: str, params: list | None = None) -> int:
    with db.reading() as conn:
        return conn.execute(sql, params).fetchone()["n"]
