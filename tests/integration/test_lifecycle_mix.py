"""Stock and credit add up, and each destination sees an order's effects in order, after a random mix of
everything that moves them, run concurrently under the relay with a worker killed and a destination down
(guarantees 19 and 20)."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
import uuid

import pytest

from nexo.books import read_books
from nexo.credit.payments import RecordPayment, record_payment
from nexo.credit.service import ApproveOrder, RejectOrder, approve_order, reject_order
from nexo.orders import cancel, dispatch
from nexo.orders.service import create_order
from nexo.outbox.wakeup import Wakeup
from tests.helpers import ROOT
from tests.integration.order_helpers import client_id, command, user_id
from tests.relay_fixtures import relay_settings, wait_until

pytestmark = pytest.mark.slow

THREADS, STEPS = 6, 25
CLIENTS = ("Corralón del Sur", "Ferretería Platino SA", "Obras Rápidas SRL")
SKUS = ("COR-200", "TOR-010", "CAB-045")


class Mix:
    """One worker thread of the mix: random use cases on the orders it can see, every outcome accepted."""

    def __init__(self, db, wakeup, seed: int):
        self.db, self.wakeup, self.rng = db, wakeup, random.Random(seed)
        self.ids = {name: user_id(db, name) for name in ("vendedor1", "laura", "sergio")}
        self.clients = [client_id(db, name) for name in CLIENTS]

    def orders(self, *statuses) -> list:
        with self.db.reading() as conn:
            return [r["id"] for r in conn.execute("SELECT id FROM orders WHERE status = ANY(%s)", [list(statuses)]).fetchall()]

    def step(self) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.35:
            client = rng.choice(CLIENTS)
            lines = [(sku, rng.randint(1, 3)) for sku in rng.sample(SKUS, rng.randint(1, 2))]
            if client == "Ferretería Platino SA":  # over its limit: it waits for credit (RN-01)
                lines = [("CAB-045", 2), ("COR-200", rng.randint(1, 3))]
            create_order(self.db, command(self.db, lines, client=client), self.wakeup)
        elif roll < 0.5 and (pending := self.orders("PENDIENTE_AUTORIZACION")):
            order_id = rng.choice(pending)
            if rng.random() < 0.6:
                approve_order(self.db, ApproveOrder(order_id, self.ids["laura"], "laura"), self.wakeup)
            else:
                reject_order(self.db, RejectOrder(order_id, self.ids["laura"], "laura", "sin crédito"))
        elif roll < 0.7 and (open_ := self.orders("CONFIRMADO", "PENDIENTE_AUTORIZACION", "DESPACHADO_PARCIAL")):
            cmd = cancel.CancelOrder(rng.choice(open_), self.ids["laura"], "laura", "el cliente lo anuló", may_cancel_any=True)
            cancel.cancel_order(self.db, cmd, self.wakeup)
        elif roll < 0.85 and (ready := self.orders("CONFIRMADO", "DESPACHADO_PARCIAL")):
            order_id = rng.choice(ready)
            lines = None if rng.random() < 0.5 else (dispatch.ShipLine(rng.choice(SKUS), 1),)
            dispatch.dispatch_order(self.db, dispatch.DispatchOrder(order_id, self.ids["sergio"], "sergio", lines))
        else:
            amount = rng.randint(1, 200_000)
            cmd = RecordPayment(rng.choice(self.clients), amount, f"pago {uuid.uuid4()}", self.ids["laura"], "laura")
            record_payment(self.db, cmd)


def effects_in_order(fakes, dest):
    """(kind, the original's key) of every effect a fake applied, in the order it applied them."""
    applied = fakes.effects(dest)
    assert [e["applied_at"] for e in applied] == sorted(e["applied_at"] for e in applied)
    return [(e["kind"], e["payload"].get("invoice_key") or e["payload"].get("handoff_key") or e["key"]) for e in applied]


def test_a_concurrent_random_mix_under_faults_keeps_the_books_and_each_destinations_order(db, redis_client, fakes, relay):
    workers = relay.start_workers(2)
    relay.start_sweepers(1)
    wakeup = Wakeup(redis_client, relay_settings())
    errors: list[BaseException] = []

    def run(seed: int) -> None:
        mix = Mix(db, wakeup, seed)
        try:
            for _ in range(STEPS):
                mix.step()
        except BaseException as exc:  # any exception is a failure of the use cases under concurrency
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(seed,)) for seed in range(THREADS)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    relay.kill(workers[0])  # kill -9 mid-delivery: its leases expire, another worker delivers
    fakes.set_mode("warehouse", "error_5xx")  # the warehouse is down for a while
    time.sleep(2.0)
    fakes.set_mode("warehouse", "ok")
    relay.start_workers(1)
    for t in threads:
        t.join()
    assert errors == []

    def settled():
        with db.reading() as conn:
            return (
                conn.execute("SELECT count(*) AS n FROM outbox_event WHERE status NOT IN ('ENTREGADO', 'RETIRADO')").fetchone()[
                    "n"
                ]
                == 0
            )

    wait_until(settled, timeout=90, message="every event delivered or withdrawn")
    failed = [f for f in read_books(db) if not f.ok]
    assert failed == [], failed

    with db.reading() as conn:
        events = conn.execute(
            "SELECT e.id, e.event_type, e.destination, e.status, e.depends_on, o.status AS order_status"
            " FROM outbox_event e JOIN orders o ON o.id = e.aggregate_id"
        ).fetchall()
    assert any(e["order_status"] == "ANULADO" for e in events), "the mix cancelled no confirmed order"
    with db.reading() as conn:
        happened = conn.execute(
            "SELECT (SELECT count(*) FROM shipment) AS shipments, (SELECT count(*) FROM payment) AS payments,"
            " (SELECT count(*) FROM orders WHERE status = 'RECHAZADO') AS rejected,"
            " (SELECT count(*) FROM orders WHERE decided_at IS NOT NULL AND status <> 'RECHAZADO') AS approved"
        ).fetchone()
    assert all(happened.values()), happened  # every kind of step ran at least once
    for dest in ("fiscal", "warehouse"):
        applied = effects_in_order(fakes, dest)
        originals = [key for kind, key in applied if kind in ("invoice", "handoff")]
        cancellations = [key for kind, key in applied if kind in ("credit_note", "handoff_cancellation")]
        assert len(originals) == len(set(originals)) and len(cancellations) == len(set(cancellations)), "an effect twice"
        for key in cancellations:  # never a cancellation before its original
            first = next(i for i, (kind, k) in enumerate(applied) if k == key)
            assert applied[first][0] in ("invoice", "handoff"), f"{dest}: cancellation of {key} before its original"
        mine = [e for e in events if e["destination"] == dest and e["depends_on"] is None]
        for e in mine:
            landed = str(e["id"]) in originals
            undone = str(e["id"]) in cancellations
            if e["order_status"] == "ANULADO":
                assert landed == undone, f"{dest}: cancelled order's {e['id']}: original {landed}, cancellation {undone}"
            else:
                assert e["status"] == "ENTREGADO" and landed and not undone, f"{dest}: {e['id']} of a live order"

    done = subprocess.run(
        [sys.executable, "-m", "flask", "--app", "app", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("verdict: stock and credit add up")
