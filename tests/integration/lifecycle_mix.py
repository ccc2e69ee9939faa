"""The random mix of tests/integration/test_lifecycle_mix.py: what people do, and what the fakes must hold after it.

`Mix` is one person-thread: orders, approvals, rejections, cancels, dispatches, payments and
dead-letter replays and discards (nexo/deadletters/service.py), each through its real use case, every
outcome accepted. `check_each_destination` reads the fakes (GET /__sandbox/effects) against Nexo's
rows, order by order and destination by destination (guarantee 20, ADR-017).
"""

from __future__ import annotations

import random
import threading
import uuid
from collections import defaultdict
from dataclasses import dataclass

from nexo.credit.payments import RecordPayment, record_payment
from nexo.credit.service import ApproveOrder, RejectOrder, approve_order, reject_order
from nexo.deadletters import service as dead_letters
from nexo.orders import cancel, dispatch
from nexo.orders.service import create_order
from tests.integration.order_helpers import client_id, command, user_id

CLIENTS = ("Corralón del Sur", "Ferretería Platino SA", "Obras Rápidas SRL")
SKUS = ("COR-200", "TOR-010", "CAB-045")
OPEN = ("CONFIRMADO", "PENDIENTE_AUTORIZACION", "DESPACHADO_PARCIAL")
ORIGINAL_KINDS = ("invoice", "handoff")
LETTERS = (
    "SELECT d.id, e.aggregate_id AS order_id, o.status AS order_status, e.depends_on IS NULL AS of_original"
    " FROM dead_letter d JOIN outbox_event e ON e.id = d.event_id JOIN orders o ON o.id = e.aggregate_id"
)


@dataclass(frozen=True)
class LetterAction:
    """A replay or discard someone tried: of which order, what that order was then, and what came of it."""

    action: str
    order_id: uuid.UUID
    order_status_then: str
    of_original: bool
    outcome: str


class Mix:
    """One person-thread of the mix: a random use case per step, paced, until `stop` is set."""

    def __init__(self, db, wakeup, seed: int, letters: list[LetterAction]):
        self.db, self.wakeup, self.rng, self.letters = db, wakeup, random.Random(seed), letters
        self.ids = {name: user_id(db, name) for name in ("vendedor1", "laura", "sergio", "marta")}
        self.clients = [client_id(db, name) for name in CLIENTS]

    def run(self, stop: threading.Event, errors: list[BaseException]) -> None:
        """Steps until stopped; any exception is a failure of the use cases under concurrency."""
        try:
            while not stop.is_set():
                self.step()
                stop.wait(self.rng.uniform(0.05, 0.3))  # paced, so the mix lasts through every fault
        except BaseException as exc:
            errors.append(exc)

    def rows(self, sql: str, params=None) -> list[dict]:
        with self.db.reading() as conn:
            return conn.execute(sql, params).fetchall()

    def orders(self, *statuses) -> list:
        return [r["id"] for r in self.rows("SELECT id FROM orders WHERE status = ANY(%s)", [list(statuses)])]

    def step(self) -> None:
        roll = self.rng.random()
        if roll < 0.30:
            self.create()
        elif roll < 0.42 and (pending := self.orders("PENDIENTE_AUTORIZACION")):
            self.decide(self.rng.choice(pending))
        elif roll < 0.60 and (open_ := self.cancellable()):
            cmd = cancel.CancelOrder(self.rng.choice(open_), self.ids["laura"], "laura", "el cliente lo anuló", True)
            cancel.cancel_order(self.db, cmd, self.wakeup)
        elif roll < 0.72 and (ready := self.orders("CONFIRMADO", "DESPACHADO_PARCIAL")):
            lines = None if self.rng.random() < 0.5 else (dispatch.ShipLine(self.rng.choice(SKUS), 1),)
            dispatch.dispatch_order(self.db, dispatch.DispatchOrder(self.rng.choice(ready), self.ids["sergio"], "sergio", lines))
        elif roll < 0.84:
            amount = self.rng.randint(1, 200_000)
            cmd = RecordPayment(self.rng.choice(self.clients), amount, f"pago {uuid.uuid4()}", self.ids["laura"], "laura")
            record_payment(self.db, cmd)
        else:
            self.dead_letter()

    def create(self) -> None:
        client = self.rng.choice(CLIENTS)
        lines = [(sku, self.rng.randint(1, 3)) for sku in self.rng.sample(SKUS, self.rng.randint(1, 2))]
        if client == "Ferretería Platino SA":  # over its limit: it waits for credit (RN-01)
            lines = [("COR-200", self.rng.randint(4, 6))]
        create_order(self.db, command(self.db, lines, client=client), self.wakeup)

    def decide(self, order_id) -> None:
        if self.rng.random() < 0.6:
            approve_order(self.db, ApproveOrder(order_id, self.ids["laura"], "laura"), self.wakeup)
        else:
            reject_order(self.db, RejectOrder(order_id, self.ids["laura"], "laura", "sin crédito"))

    def cancellable(self) -> list:
        """Open orders; half the time only those with a dead letter, so that cancels meet dead letters."""
        if self.rng.random() < 0.5:
            marked = self.rows(
                "SELECT DISTINCT o.id FROM orders o JOIN outbox_event e ON e.aggregate_id = o.id"
                " JOIN dead_letter d ON d.event_id = e.id WHERE o.status = ANY(%s)",
                [list(OPEN)],
            )
            if marked:
                return [r["id"] for r in marked]
        return self.orders(*OPEN)

    def dead_letter(self) -> None:
        """Marta replays or discards a pending dead letter; or replays one of a cancelled order's original,
        which must bring nothing back (ADR-017)."""
        if self.rng.random() < 0.7:
            candidates = self.rows(LETTERS + " WHERE d.status = 'pending'")
            replaying = self.rng.random() < 0.6
        else:
            candidates = self.rows(LETTERS + " WHERE o.status = 'ANULADO' AND e.depends_on IS NULL")
            replaying = True
        if candidates:
            self.act_on(self.rng.choice(candidates), replaying)

    def decide_then_cancel(self) -> None:
        """On purpose, what the random steps may take a while to stumble on: Marta decides on the pending dead
        letter of a confirmed order's original, Laura cancels the order, Marta replays that letter again."""
        candidates = self.rows(LETTERS + " WHERE d.status = 'pending' AND e.depends_on IS NULL AND o.status = 'CONFIRMADO'")
        if not candidates:
            return
        letter = self.rng.choice(candidates)
        self.act_on(letter, replaying=self.rng.random() < 0.5)
        cmd = cancel.CancelOrder(letter["order_id"], self.ids["laura"], "laura", "el cliente lo anuló", True)
        cancel.cancel_order(self.db, cmd, self.wakeup)
        for again in self.rows(
            LETTERS + " WHERE o.id = %s AND o.status = 'ANULADO' AND e.depends_on IS NULL", [letter["order_id"]]
        ):
            self.act_on(again, replaying=True)

    def act_on(self, letter: dict, replaying: bool) -> None:
        """Replay or discard one dead letter through nexo/deadletters/service.py, and note what came of it."""
        if replaying:
            result = dead_letters.replay(self.db, letter["id"], "marta", wakeup=self.wakeup)
        else:
            result = dead_letters.discard(self.db, letter["id"], "marta", "el destino no lo va a aceptar")
        if letter["order_status"] == "ANULADO" and letter["of_original"]:
            assert not isinstance(result, dead_letters.Done), f"the cancelled order {letter['order_id']}'s original came back"
        action = "replay" if replaying else "discard"
        self.letters.append(
            LetterAction(action, letter["order_id"], letter["order_status"], letter["of_original"], result.outcome)
        )


@dataclass
class Pair:
    """One order at one destination: Nexo's original and cancellation events, and what the fake applied."""

    original_event: dict | None = None
    cancellation_event: dict | None = None
    originals: list | None = None
    cancellations: list | None = None


def pairs(events: list[dict], applied: list[dict], dest: str) -> dict:
    """Pair by order id (every payload names its order) Nexo's events of `dest` and the fake's effects."""
    found: dict = defaultdict(lambda: Pair(originals=[], cancellations=[]))
    for e in events:
        if e["destination"] == dest:
            pair = found[str(e["order_id"])]
            if e["depends_on"] is None:
                pair.original_event = e
            else:
                pair.cancellation_event = e
    for effect in applied:
        pair = found[effect["payload"]["order_id"]]
        (pair.originals if effect["kind"] in ORIGINAL_KINDS else pair.cancellations).append(effect)
    return found


def check_each_destination(events: list[dict], applied: list[dict], dest: str) -> dict[str, int]:
    """Guarantee 20 at one destination, order by order; return how many orders fell in each case.

    At most one original and one cancellation per order; a cancellation only after its original; a
    cancelled order that was delivered before its cancel has both, one cancelled before has neither (or
    both, when its original was on its way: its cancellation then undid it) — a lone effect only where a
    dead letter explains it; a live order has its original exactly when Nexo says it was delivered.
    """
    assert [e["applied_at"] for e in applied] == sorted(e["applied_at"] for e in applied)
    cases: dict[str, int] = defaultdict(int)
    for order_id, p in pairs(events, applied, dest).items():
        where = f"{dest}, order {order_id}"
        assert len(p.originals) <= 1 and len(p.cancellations) <= 1, f"{where}: an effect twice: {p}"
        original = p.originals[0] if p.originals else None
        undone = p.cancellations[0] if p.cancellations else None
        o, c = p.original_event, p.cancellation_event
        assert original is None or (o is not None and original["key"] == str(o["id"])), f"{where}: an effect Nexo never sent"
        if undone is not None:
            assert original is not None, f"{where}: a cancellation of an effect the fake never had"
            assert undone["payload"].get("invoice_key", undone["payload"].get("handoff_key")) == original["key"]
            # The list is in the order the fake applied them; applied_at never goes backwards in it (CONTRACT.md).
            assert applied.index(original) < applied.index(undone), f"{where}: the cancellation before its original"
            assert original["applied_at"] <= undone["applied_at"], f"{where}: {original}, {undone}"
            assert c is not None and (c["status"] == "ENTREGADO" or c["dead_lettered"]), f"{where}: {c}"
        explained = bool((o and o["dead_lettered"]) or (c and c["dead_lettered"]))
        if o is None:
            assert original is None and undone is None and c is None, f"{where}: effects of an order never confirmed"
            continue
        if o["order_status"] != "ANULADO":
            cases["live"] += 1
            assert c is None and undone is None, f"{where}: a live order's original was cancelled"
            assert o["status"] == "ENTREGADO" or (o["status"] == "FALLIDO" and o["dead_lettered"]), f"{where}: {o}"
            assert original is not None or o["status"] != "ENTREGADO", f"{where}: delivered, but the fake lacks it"
        elif o["status"] == "ENTREGADO":
            cases["cancelled after delivery"] += 1
            assert original is not None and c is not None, f"{where}: {o}, {c}"
            assert undone is not None or (c["status"] == "FALLIDO" and c["dead_lettered"]), f"{where}: not undone: {c}"
        else:
            assert o["status"] == "RETIRADO", f"{where}: a cancelled order's original is {o['status']}"
            cases["cancelled on its way" if undone is not None else "cancelled before delivery"] += 1
            assert (original is None) == (undone is None) or explained, f"{where}: one effect without the other"
            assert c is None or c["status"] != "RETIRADO" or original is None, f"{where}: 'never applied', but it was"
    return dict(cases)
