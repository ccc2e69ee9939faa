"""Stock and credit add up (guarantee 19): the equations `flask --app app check` verifies on real data.

- every stock row's `reserved` is what its live reservations hold (`quantity - dispatched` while
  `released_at` is NULL), and its `on_hand` is what it opened with minus what was shipped;
- a reservation is live exactly while its order is open, firm once the order is confirmed;
- every client's exposure is its opening balance plus what its orders charged, minus its payments and
  what cancels gave back (a cancelled order's charge);
- an order charged its total exactly when it was confirmed (at entry or by credit).
Each check reads the whole table once; on the grown bench database it takes seconds, not a request's
time: it is an operator's command (and `backup verify`'s), never a page.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import click
from flask import Flask

from nexo.db import Conn, Database
from nexo.states import OPEN_ORDER_STATUSES, OrderStatus, ReservationKind

SHOWN = 5  # offending rows named per failed check; the count says how many there are

# The states the checks name, bound as parameters of every check (so a literal % in them is written %%).
STATES = {
    "open": list(OPEN_ORDER_STATUSES),
    "soft": ReservationKind.BLANDA,
    # never confirmed: their reservation stays soft and they charge nothing
    "never_confirmed": [OrderStatus.PENDIENTE_AUTORIZACION, OrderStatus.RECHAZADO],
    # confirmed, dispatched or not: they charged their total
    "confirmed": [OrderStatus.CONFIRMADO, OrderStatus.DESPACHADO_PARCIAL, OrderStatus.DESPACHADO],
    "cancelled": OrderStatus.ANULADO,
}


@dataclass(frozen=True)
class Finding:
    """One check: what it says, whether it holds, and the offending rows when it does not."""

    name: str
    ok: bool
    detail: str


CHECKS: list[tuple[str, str, str]] = [
    (
        "stock reserved = what the live reservations hold",
        """
        SELECT p.sku || '@' || s.warehouse_id AS what,
               format('reserved %%s, reservations hold %%s', s.reserved, coalesce(h.held, 0)) AS why
          FROM stock_level s JOIN product p ON p.id = s.product_id
          LEFT JOIN (SELECT product_id, warehouse_id, sum(quantity - dispatched) AS held FROM stock_reservation
                      WHERE released_at IS NULL GROUP BY product_id, warehouse_id) h USING (product_id, warehouse_id)
         WHERE s.reserved <> coalesce(h.held, 0)
        """,
        "stock rows",
    ),
    (
        "stock on hand = opening - shipped",
        """
        SELECT p.sku || '@' || s.warehouse_id AS what,
               format('on hand %%s, opened with %%s and shipped %%s', s.on_hand, s.opening_on_hand, coalesce(x.shipped, 0)) AS why
          FROM stock_level s JOIN product p ON p.id = s.product_id
          LEFT JOIN (SELECT product_id, warehouse_id, sum(quantity) AS shipped FROM shipment_line
                      GROUP BY product_id, warehouse_id) x USING (product_id, warehouse_id)
         WHERE s.on_hand <> s.opening_on_hand - coalesce(x.shipped, 0)
        """,
        "stock rows",
    ),
    (
        "a reservation is live exactly while its order is open, firm once confirmed",
        """
        SELECT o.id::text || ' ' || r.product_id::text AS what,
               format('order %%s, reservation %%s %%s, dispatched %%s of %%s', o.status, r.kind,
                      CASE WHEN r.released_at IS NULL THEN 'live' ELSE 'released' END, r.dispatched, r.quantity) AS why
          FROM stock_reservation r JOIN orders o ON o.id = r.order_id
         WHERE (r.released_at IS NULL) <> (o.status = ANY(%(open)s) AND r.dispatched < r.quantity)
            OR (r.kind = %(soft)s) <> (o.status = ANY(%(never_confirmed)s) OR (o.status = %(cancelled)s AND o.charged_cents = 0))
        """,
        "reservations",
    ),
    (
        "client exposure = opening + charged - paid - given back by cancels",
        """
        SELECT c.name AS what,
               format('exposure %%s, opening %%s + charged %%s - paid %%s - given back %%s', c.exposure_cents,
                      c.opening_exposure_cents, coalesce(o.charged, 0), coalesce(p.paid, 0), coalesce(o.given_back, 0)) AS why
          FROM client c
          LEFT JOIN (SELECT client_id, sum(charged_cents) AS charged,
                            sum(charged_cents) FILTER (WHERE status = %(cancelled)s) AS given_back
                       FROM orders GROUP BY client_id) o ON o.client_id = c.id
          LEFT JOIN (SELECT client_id, sum(amount_cents) AS paid FROM payment GROUP BY client_id) p ON p.client_id = c.id
         WHERE c.exposure_cents <> c.opening_exposure_cents + coalesce(o.charged, 0) - coalesce(p.paid, 0)
                                   - coalesce(o.given_back, 0)
        """,
        "clients",
    ),
    (
        "an order charged its total exactly when it was confirmed",
        """
        SELECT o.id::text AS what, format('%%s, charged %%s of %%s', o.status, o.charged_cents, o.total_cents) AS why
          FROM orders o
         WHERE o.charged_cents <> CASE
                 WHEN o.status = ANY(%(confirmed)s) THEN o.total_cents
                 WHEN o.status = ANY(%(never_confirmed)s) THEN 0
                 ELSE o.charged_cents END  -- a cancelled order keeps what it had charged (0 or its total)
            OR (o.status = %(cancelled)s AND o.charged_cents NOT IN (0, o.total_cents))
        """,
        "orders",
    ),
]


def check_books(conn: Conn) -> list[Finding]:
    """Run every check on the caller's connection (one snapshot: run it in a REPEATABLE READ transaction)."""
    findings = []
    for name, sql, noun in CHECKS:
        rows = conn.execute(sql, STATES).fetchall()
        if not rows:
            findings.append(Finding(name, True, "holds"))
            continue
        shown = "; ".join(f"{r['what']}: {r['why']}" for r in rows[:SHOWN])
        more = f" (and {len(rows) - SHOWN} more)" if len(rows) > SHOWN else ""
        findings.append(Finding(name, False, f"{len(rows)} {noun} do not add up: {shown}{more}"))
    return findings


def read_books(db: Database) -> list[Finding]:
    """check_books in one consistent snapshot of the database."""
    with db.pool.connection() as conn:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        try:
            return check_books(conn)
        finally:
            conn.rollback()


def init_app(app: Flask) -> None:
    """Register `flask check`: the books, a line per check, the verdict last; exit status 0 only when they hold."""

    @app.cli.command("check")
    def check() -> None:
        """Check that stock and credit add up on this database (guarantee 19)."""
        findings = read_books(app.extensions["nexo.db"])
        for f in findings:
            click.echo(f"{'ok  ' if f.ok else 'FAIL'}  {f.name}: {f.detail}")
        failed = [f for f in findings if not f.ok]
        if failed:
            # The verdict names what does not add up: an operator reading only the last line knows where to look.
            named = "; ".join(f.name for f in failed)
            click.echo(f"verdict: the books do NOT add up: {named} ({len(failed)} of {len(findings)} checks failed)")
            sys.exit(1)
        click.echo(f"verdict: stock and credit add up ({len(findings)} checks)")
