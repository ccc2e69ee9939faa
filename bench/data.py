"""Bench data: the Nexo morning plus a realistic spread of clients, SKUs and salespeople.

Order entry serialises on hot rows by design (a client's credit row, a SKU's stock row: RN-01,
ADR-002). A bench that sent every order to one client and one SKU would measure one row lock, not the
system; so the bench adds many clients with huge credit limits and many SKUs with huge stock, and each
order picks its client and SKUs at random. The hot SKU phase measures the single-row case on purpose.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass

import psycopg
import redis
from psycopg.types.json import Jsonb
from rq import Queue
from werkzeug.security import generate_password_hash

from nexo import demo
from nexo.auth.service import create_user
from nexo.outbox import wakeup
from nexo.settings import Settings

WAREHOUSE = "CEN"
PRICE_CENTS = 10_000  # ARS 100.00 per unit
HUGE_CREDIT_CENTS = 10**15  # no bench order ever waits for the credit officer
HUGE_STOCK = 1_000_000_000  # fits stock_level's integer columns, never runs out


@dataclass(frozen=True)
class BenchData:
    """What the load generators pick from."""

    client_ids: list[uuid.UUID]
    skus: list[str]
    usernames: list[str]
    salesperson_ids: list[int]
    password: str

    def order_lines(self, rng: random.Random, count: int = 2) -> list[tuple[str, int]]:
        """`count` distinct random SKUs with small quantities, like a salesperson's order."""
        return [(sku, rng.randint(1, 3)) for sku in rng.sample(self.skus, count)]


def load(db, *, clients: int, skus: int, salespeople: int, password: str) -> BenchData:
    """Load the Nexo morning and the bench rows into an empty database, in one transaction."""
    password_hash = generate_password_hash(password)
    with db.transaction() as tx:
        conn = tx.conn
        if not demo.is_empty(conn):
            raise SystemExit("bench: the database already has data; run the bench on a fresh one (make bench does)")
        demo.load(conn, password)
        with conn.cursor() as cur:
            client_rows = [(f"Cliente bench {i:03d}", HUGE_CREDIT_CENTS) for i in range(clients)]
            cur.executemany("INSERT INTO client (name, tier, credit_limit_cents) VALUES (%s, 'REGULAR', %s)", client_rows)
            sku_names = [f"BEN-{i:04d}" for i in range(skus)]
            cur.executemany(
                "INSERT INTO product (sku, name) VALUES (%s, %s)", [(sku, f"Artículo de banco {sku}") for sku in sku_names]
            )
        conn.execute(
            "INSERT INTO price_list (product_id, price_cents) SELECT id, %s FROM product WHERE sku LIKE 'BEN-%%'", [PRICE_CENTS]
        )
        conn.execute(
            "INSERT INTO stock_level (product_id, warehouse_id, on_hand) SELECT id, %s, %s FROM product WHERE sku LIKE 'BEN-%%'",
            [WAREHOUSE, HUGE_STOCK],
        )
        client_ids = [
            r["id"] for r in conn.execute("SELECT id FROM client WHERE name LIKE 'Cliente bench %' ORDER BY name").fetchall()
        ]
        usernames = [f"bench{i:02d}" for i in range(salespeople)]
        ids = [create_user(conn, name, f"Vendedor de banco {name[5:]}", password_hash, ["ventas"]) for name in usernames]
        tx.commit()
    return BenchData(client_ids, sku_names, usernames, ids, password)


def add_hot_sku(db) -> str:
    """A new SKU with exactly one unit in CEN, for the hot-SKU buyers; returns the SKU."""
    sku = f"HOT-{uuid.uuid4().hex[:6].upper()}"
    with db.transaction() as tx:
        product_id = tx.execute("INSERT INTO product (sku, name) VALUES (%s, 'La última unidad') RETURNING id", [sku]).fetchone()[
            "id"
        ]
        tx.execute("INSERT INTO price_list (product_id, price_cents) VALUES (%s, %s)", [product_id, PRICE_CENTS])
        tx.execute("INSERT INTO stock_level (product_id, warehouse_id, on_hand) VALUES (%s, %s, 1)", [product_id, WAREHOUSE])
        tx.commit()
    return sku


def hot_sku_state(db, sku: str) -> dict:
    """How many orders reserved the hot SKU, and its stock row."""
    with db.reading() as conn:
        return conn.execute(
            "SELECT s.on_hand, s.reserved, (SELECT count(*) FROM stock_reservation r WHERE r.product_id = p.id) AS orders"
            " FROM product p JOIN stock_level s ON s.product_id = p.id AND s.warehouse_id = %s WHERE p.sku = %s",
            [WAREHOUSE, sku],
        ).fetchone()


def retire_pending_events(db) -> int:
    """Delete undelivered outbox events (left by the order-entry phases, which run without workers).

    Bench-only: each relay run then starts from an empty outbox and measures only its own events. The
    deleted rows are vacuumed away at once, or the next measurement walks their dead entries in the
    queue's partial index: the delivery floor right after the order floor (24,000 events deleted) ran
    1,755 events/s at 1.04 ms of Postgres CPU per event without this, 2,627 at 0.50 with it (one run each).
    """
    with db.transaction() as tx:
        deleted = tx.execute("DELETE FROM outbox_event WHERE status = 'PENDIENTE'").rowcount
        tx.commit()
    if deleted:
        with psycopg.connect(db.url, autocommit=True) as conn:
            conn.execute("VACUUM (ANALYZE) outbox_event")
    return deleted


def insert_confirmed_orders(db, data: BenchData, count: int) -> list[uuid.UUID]:
    """`count` CONFIRMADO 2-line orders with their two PENDIENTE events each, by plain SQL; returns the event ids."""
    rng = random.Random(count)
    with db.transaction() as tx:
        products = {
            r["sku"]: r["id"] for r in tx.execute("SELECT sku, id FROM product WHERE sku = ANY(%s)", [data.skus]).fetchall()
        }
        orders, lines, events = [], [], []
        for i in range(count):
            order_id, client_id = uuid.uuid4(), data.client_ids[i % len(data.client_ids)]
            picked = sorted(data.order_lines(rng))
            total = sum(q * PRICE_CENTS for _, q in picked)
            orders.append((order_id, client_id, data.salesperson_ids[0], total))
            lines += [(order_id, products[sku], sku, q, PRICE_CENTS) for sku, q in picked]
            # The same payload shape create_order writes (nexo.orders.service._event_payload).
            payload = Jsonb(
                {
                    "order_id": str(order_id),
                    "warehouse_id": WAREHOUSE,
                    "currency": "ARS",
                    "client": {"id": str(client_id), "name": "Cliente bench", "tier": "REGULAR"},
                    "lines": [
                        {"sku": sku, "quantity": q, "unit_price_cents": PRICE_CENTS, "amount_cents": q * PRICE_CENTS}
                        for sku, q in picked
                    ],
                    "total_cents": total,
                }
            )
            events.append((uuid.uuid4(), order_id, "billing.intent_recorded", "fiscal", payload))
            events.append((uuid.uuid4(), order_id, "order.handoff_requested", "warehouse", payload))
        with tx.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents,"
                " billing_status) VALUES (%s, %s, 'CEN', %s, 'CONFIRMADO', %s, 'PENDIENTE_FACTURACION')",
                orders,
            )
            cur.executemany(
                "INSERT INTO order_line (order_id, product_id, sku, quantity, unit_price_cents) VALUES (%s, %s, %s, %s, %s)",
                lines,
            )
            cur.executemany(
                "INSERT INTO outbox_event (id, aggregate_id, event_type, destination, payload) VALUES (%s, %s, %s, %s, %s)",
                events,
            )
        tx.commit()
    return [e[0] for e in events]


def reset_relay(db, connection: redis.Redis) -> None:
    """No event left to deliver and an empty relay queue, before a relay measurement."""
    retire_pending_events(db)
    queue = Settings.from_env().relay_queue
    Queue(queue, connection=connection).empty()
    # Emptying the queue may delete a drain job whose flag is still up (the HTTP phases' orders rang
    # one that no worker ran): while that flag lives (a lease), every commit-time wake-up would be
    # skipped and the next measurement's first events would wait for it to expire.
    wakeup.clear_pending(connection, queue)
