"""`flask --app app check` says when the books do not add up (guarantee 19), run as the operator runs it.

Each test makes real orders, a dispatch and a payment (the books hold), puts one figure off by one the
way only a hand-made UPDATE can (no constraint stops these: each stays within its CHECKs), and runs
the real command in its own process: exit status 1, a FAIL line naming the row and both figures, and
a last line that says the books do not add up and names the check.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from nexo.books import read_books
from nexo.credit.payments import RecordPayment, record_payment
from nexo.orders import dispatch
from nexo.orders.service import create_order
from tests.helpers import ROOT
from tests.integration.order_helpers import client_id, command, user_id

COR_200 = "(SELECT id FROM product WHERE sku = 'COR-200')"
CORRUPTIONS = {
    "reserved": (
        f"UPDATE stock_level SET reserved = reserved + 1 WHERE product_id = {COR_200} AND warehouse_id = 'CEN'",
        "stock reserved = what the live reservations hold",
        "1 stock rows do not add up: COR-200@CEN: reserved 3, reservations hold 2",
    ),
    "on_hand": (
        f"UPDATE stock_level SET on_hand = on_hand - 1 WHERE product_id = {COR_200} AND warehouse_id = 'CEN'",
        "stock on hand = opening - shipped",
        "1 stock rows do not add up: COR-200@CEN: on hand 498, opened with 500 and shipped 1",
    ),
    "exposure": (
        "UPDATE client SET exposure_cents = exposure_cents + 1 WHERE name = 'Corralón del Sur'",
        "client exposure = opening + charged - paid - given back by cancels",
        "1 clients do not add up: Corralón del Sur: exposure 860001, opening 0 + charged 960000 - paid 100000 - given back 0",
    ),
}


def run_check() -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flask", "--app", "app", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def an_order_shipped_in_part_and_paid_in_part(db) -> None:
    """COR-200 × 3 for Corralón del Sur (9,600.00), one unit shipped, 1,000.00 paid."""
    order = create_order(db, command(db, [("COR-200", 3)]))
    assert order.order_status == "CONFIRMADO"
    sergio, laura = user_id(db, "sergio"), user_id(db, "laura")
    one = (dispatch.ShipLine("COR-200", 1),)
    dispatch.dispatch_order(db, dispatch.DispatchOrder(order.order_id, sergio, "sergio", one))
    record_payment(db, RecordPayment(client_id(db, "Corralón del Sur"), 100_000, "recibo 0001", laura, "laura"))
    assert [f for f in read_books(db) if not f.ok] == []


@pytest.mark.parametrize("figure", CORRUPTIONS)
def test_a_figure_off_by_one_fails_the_check_and_its_last_line_names_it(db, figure):
    an_order_shipped_in_part_and_paid_in_part(db)
    sql, check, detail = CORRUPTIONS[figure]
    with db.transaction() as tx:
        assert tx.execute(sql).rowcount == 1
        tx.commit()

    done = run_check()

    lines = done.stdout.strip().splitlines()
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"FAIL  {check}: {detail}" in lines
    assert sum(line.startswith("FAIL") for line in lines) == 1, lines  # only the figure that was put off
    assert lines[-1] == f"verdict: the books do NOT add up: {check} (1 of 5 checks failed)"
