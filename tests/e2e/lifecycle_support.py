"""Helpers of the order-life page tests: enter, read and post the pages as people do, and snapshot what must not move."""

from __future__ import annotations

import re
import time

from itsdangerous import TimestampSigner, URLSafeTimedSerializer

from nexo.books import read_books
from tests.e2e.order_forms import form_data, order_id_from
from tests.helpers import csrf_token

PLATINO = "Ferretería Platino SA"
CORRALON = "Corralón del Sur"


def enter(client, auth, lines, client_name=CORRALON, salesperson="vendedor1") -> str:
    """The salesperson enters an order through the form; returns its id (the salesperson stays logged in)."""
    auth.logout()
    auth.login(salesperson)
    html = client.get("/orders/new").get_data(as_text=True)
    response = client.post("/orders/new", data=form_data(html, client_name, lines))
    assert response.status_code == 303, response.get_data(as_text=True)[:500]
    return order_id_from(response.headers["Location"])


def as_user(client, auth, username: str) -> None:
    """Log the test client in as someone else."""
    auth.logout()
    auth.login(username)


def page(client, url: str) -> str:
    """A page that must answer 200."""
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response.get_data(as_text=True)


def attr(fragment: str, name: str) -> str:
    """The value of the first attribute `name` in an HTML fragment."""
    match = re.search(rf'{name}="([^"]*)"', fragment)
    assert match, f"no {name}"
    return match.group(1)


def cancel(client, order_id: str, reason: str = "el cliente llamó para anularlo", **extra):
    """POST the order page's cancel form, as its salesperson or anyone else (a 404 for them)."""
    html = client.get("/", follow_redirects=True).get_data(as_text=True)  # the logout form carries the session's token
    return client.post(f"/orders/{order_id}/cancel", data={"csrf_token": csrf_token(html), "reason": reason, **extra})


def dispatch_form(html: str, order_id: str) -> dict:
    """The fields the warehouse page's form of one order posts, as drawn (default: what remains of each line)."""
    start = html.index(f'data-dispatch-order="{order_id}"')
    form = html[start : html.index("</article>", start)]
    fields = dict(re.findall(r'name="([^"]+)"\s+value="([^"]*)"', form))
    fields["csrf_token"] = csrf_token(html)
    return fields


def dispatch(client, order_id: str, quantities: dict[str, str] | None = None, **extra):
    """POST the warehouse page's form of the order, with some quantities changed ({sku: text}) and extra fields."""
    fields = dispatch_form(page(client, "/warehouse"), order_id)
    for key, value in list(fields.items()):
        match = re.fullmatch(r"lines-(\d+)-sku", key)
        if match and quantities and value in quantities:
            fields[f"lines-{match.group(1)}-quantity"] = quantities[value]
    return client.post(f"/warehouse/orders/{order_id}/dispatch", data={**fields, **extra})


def received_by_warehouse(db, order_id: str, ticket: str = "DEP-1") -> None:
    """What the relay records when the warehouse accepts the handoff (the relay itself is tested apart)."""
    with db.transaction() as tx:
        tx.execute("UPDATE orders SET handoff_ticket = %s WHERE id = %s", [ticket, order_id])
        tx.execute(
            "UPDATE outbox_event SET status = 'ENTREGADO', attempts = 1, delivered_at = now()"
            " WHERE aggregate_id = %s AND event_type = 'order.handoff_requested'",
            [order_id],
        )
        tx.commit()


def books_hold(db) -> None:
    """flask check's equations hold on the database (nexo/books.py)."""
    failed = [f for f in read_books(db) if not f.ok]
    assert failed == [], failed


def snapshot(db) -> dict:
    """Everything a refused request must leave as it was: stock, exposures, statuses, audit, shipments, payments."""
    with db.reading() as conn:
        return {
            "stock": conn.execute("SELECT product_id, warehouse_id, on_hand, reserved FROM stock_level ORDER BY 1, 2").fetchall(),
            "clients": conn.execute("SELECT id, credit_limit_cents, exposure_cents FROM client ORDER BY id").fetchall(),
            "orders": conn.execute("SELECT id, status, billing_status, charged_cents FROM orders ORDER BY id").fetchall(),
            "reservations": conn.execute(
                "SELECT order_id, product_id, dispatched, released_at FROM stock_reservation ORDER BY 1, 2"
            ).fetchall(),
            "events": conn.execute("SELECT id, status FROM outbox_event ORDER BY id").fetchall(),
            "audit": conn.execute("SELECT count(*) AS n FROM audit_log").fetchone()["n"],
            "shipments": conn.execute("SELECT count(*) AS n FROM shipment").fetchone()["n"],
            "payments": conn.execute("SELECT count(*) AS n FROM payment").fetchone()["n"],
        }


def timeline_kinds(html: str) -> list[str]:
    """The order page's story, as the codes of its steps in the order shown."""
    return re.findall(r'data-timeline-kind="([a-z_]+)"', html)


class _EightHoursAgo(TimestampSigner):
    def get_timestamp(self) -> int:
        return int(time.time()) - 9 * 3600


def expired_csrf_token(app, client) -> str:
    """A CSRF token of this session signed nine hours ago: past WTF_CSRF_TIME_LIMIT (8 h), as a form left open overnight."""
    client.get("/", follow_redirects=True)  # the session has its raw token once a page with a form was drawn
    with client.session_transaction() as session:
        raw = session["csrf_token"]
    return URLSafeTimedSerializer(app.secret_key, salt="wtf-csrf-token", signer=_EightHoursAgo).dumps(raw)
