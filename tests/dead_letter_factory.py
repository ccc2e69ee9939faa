"""Build dead letters the way the relay leaves them, straight in SQL (for the dead-letter tests).

An order, one outbox event in FALLIDO with its delivery attempts, and open_dead_letter called in the
same transaction, exactly as the relay does when an event reaches FALLIDO (guarantee 11).
"""

from __future__ import annotations

import uuid

from nexo.outbox.dead_letter import open_dead_letter
from nexo.outbox.repository import add_events

EVENT_TYPES = {"fiscal": "billing.intent_recorded", "warehouse": "order.handoff_requested"}


def make_order(
    conn, *, client: str = "Corralón del Sur", salesperson: str = "vendedor1", total_cents: int = 1_250_000
) -> uuid.UUID:
    """A confirmed order of the demo client, entered by the demo salesperson."""
    return conn.execute(
        "INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents, billing_status)"
        " VALUES (gen_random_uuid(), (SELECT id FROM client WHERE name = %s), 'CEN',"
        "         (SELECT id FROM app_user WHERE username = %s), 'CONFIRMADO', %s, 'PENDIENTE_FACTURACION')"
        " RETURNING id",
        [client, salesperson, total_cents],
    ).fetchone()["id"]


def fail_event(
    conn, event_id, *, destination: str, attempts: int, http_status: int | None, error: str, error_class: str | None = None
) -> int:
    """Record `attempts` failed tries and move the event to FALLIDO with its dead letter; return the dead letter id."""
    already = conn.execute("SELECT attempts FROM outbox_event WHERE id = %s", [event_id]).fetchone()["attempts"]
    for n in range(already + 1, already + attempts + 1):
        last = n == already + attempts
        conn.execute(
            "INSERT INTO delivery_attempt (event_id, attempt_no, claim_token, worker, started_at, finished_at,"
            "                              outcome, http_status, error, duration_ms)"
            " VALUES (%s, %s, gen_random_uuid(), 'test-worker', now() - make_interval(secs => %s),"
            "         now() - make_interval(secs => %s) + interval '42 ms', %s, %s, %s, 42)",
            # earlier tries happened earlier, in their own transactions, as the relay does them
            [
                event_id,
                n,
                already + attempts - n + 1,
                already + attempts - n + 1,
                "FALLIDO" if last else "REINTENTO",
                http_status,
                error,
            ],
        )
    conn.execute(
        "UPDATE outbox_event SET status = 'FALLIDO', attempts = %s, last_error = %s,"
        " locked_until = NULL, claim_token = NULL WHERE id = %s",
        [already + attempts, error, event_id],
    )
    return open_dead_letter(
        conn,
        event_id=event_id,
        destination=destination,
        attempts=already + attempts,
        last_error=error,
        http_status=http_status,
        error_class=error_class,
    )


def make_dead_letter(
    db,
    *,
    destination: str = "fiscal",
    http_status: int | None = 422,
    error: str = "422 Unprocessable Entity: CUIT inválido",
    attempts: int = 1,
    client: str = "Corralón del Sur",
    total_cents: int = 1_250_000,
    payload: dict | None = None,
    error_class: str | None = None,
) -> dict:
    """One pending dead letter with its order and event; returns ids {id, event_id, order_id}."""
    with db.transaction() as tx:
        order_id = make_order(tx.conn, client=client, total_cents=total_cents)
        [event_id] = add_events(
            tx.conn,
            order_id=order_id,
            event_types=[EVENT_TYPES[destination]],
            payload=payload or {"order_id": str(order_id), "total_cents": total_cents},
        )
        dead_letter_id = fail_event(
            tx.conn,
            event_id,
            destination=destination,
            attempts=attempts,
            http_status=http_status,
            error=error,
            error_class=error_class,
        )
        tx.commit()
    return {"id": dead_letter_id, "event_id": event_id, "order_id": order_id}


def age(db, dead_letter_id: int, *, days: int) -> None:
    """Move a dead letter's failure and (if any) resolution `days` into the past."""
    with db.transaction() as tx:
        tx.execute(
            "UPDATE dead_letter SET last_failed_at = last_failed_at - make_interval(days => %s),"
            " first_failed_at = first_failed_at - make_interval(days => %s),"
            " resolved_at = resolved_at - make_interval(days => %s) WHERE id = %s",
            [days, days, days, dead_letter_id],
        )
        tx.commit()


def audit_rows(db, action: str, object_id=None) -> list[dict]:
    """Audit rows of one action (optionally about one object), oldest first."""
    with db.reading() as conn:
        sql = "SELECT * FROM audit_log WHERE action = %s"
        params = [action]
        if object_id is not None:
            sql += " AND object_id = %s"
            params.append(str(object_id))
        return conn.execute(sql + " ORDER BY id", params).fetchall()


def row(db, sql: str, params=None) -> dict | None:
    """One row of a query, for assertions."""
    with db.reading() as conn:
        return conn.execute(sql, params).fetchone()
