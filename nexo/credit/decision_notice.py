"""The email to the salesperson when credit decides their order (README "Email notifications").

Queued in the decision's own transaction (guarantee 7), only when SMTP_URL is set (Settings.mail): the
decision and its email are recorded together or not at all (nexo/mail/). An order is decided once, so
its key (`credit-decision:<order id>`) is too.
"""

from __future__ import annotations

import uuid

from nexo.db import Conn, one_row
from nexo.formatting import format_ars, format_order_number
from nexo.mail.queue import queue_to_user

SIGNATURE = "—\nNexo (mensaje automático; no hace falta responderlo)"


def queue_decision(conn: Conn, order_id: uuid.UUID, *, approved: bool, officer_id: int, words: str | None) -> int:
    """Queue the email telling the order's salesperson what credit decided (`words`: the note or the reason)."""
    order = one_row(
        conn.execute(
            "SELECT o.number, o.total_cents, o.salesperson_id, s.full_name AS salesperson, c.name AS client_name,"
            "       (SELECT full_name FROM app_user WHERE id = %s) AS officer"
            "  FROM orders o JOIN client c ON c.id = o.client_id JOIN app_user s ON s.id = o.salesperson_id"
            " WHERE o.id = %s",
            [officer_id, order_id],
        )
    )
    number = format_order_number(order["number"])
    what = f"el pedido {number} de {order['client_name']}, por {format_ars(order['total_cents'])}"
    if approved:
        subject = f"Crédito aprobó tu pedido {number}"
        text = (
            f"{order['officer']} aprobó {what}. El pedido quedó confirmado: el depósito lo va a preparar y se va a facturar."
            + (f"\n\nNota de crédito: {words}" if words else "")
        )
    else:
        subject = f"Crédito rechazó tu pedido {number}"
        text = (
            f"{order['officer']} rechazó {what}.\n\nMotivo: {words}\n\n"
            "La mercadería que tenía reservada volvió al stock. Si el cliente todavía la necesita, podés cargar un "
            "pedido nuevo."
        )
    body = f"Hola, {order['salesperson']}:\n\n{text}\n\nLo ves en Nexo, en «Mis pedidos».\n\n{SIGNATURE}"
    return queue_to_user(conn, key=f"credit-decision:{order_id}", user_id=order["salesperson_id"], subject=subject, body=body)
