"""The email to the credit officers when an order waits for their authorization (README "Email notifications").

Queued in create_order's own transaction, only when SMTP_URL is set (Settings.mail): the order and its
email are recorded together or not at all (nexo/mail/).
"""

from __future__ import annotations

import uuid

from nexo.db import Conn, one_row
from nexo.formatting import format_ars, format_order_number
from nexo.mail.queue import queue_to_permission

# Who authorizes credit (CU-02): the permission behind the credit queue (nexo/credit/views.py).
CREDIT_OFFICER = "credit.authorize"
SIGNATURE = "—\nNexo (mensaje automático; no hace falta responderlo)"


def queue_waiting_for_credit(conn: Conn, order_id: uuid.UUID) -> int:
    """Queue the email saying this order waits for credit authorization, to every credit officer; return how many."""
    order = one_row(
        conn.execute(
            "SELECT o.number, o.total_cents, c.name AS client_name, u.full_name AS salesperson"
            "  FROM orders o JOIN client c ON c.id = o.client_id JOIN app_user u ON u.id = o.salesperson_id"
            " WHERE o.id = %s",
            [order_id],
        )
    )
    number = format_order_number(order["number"])
    body = (
        "Hola:\n\n"
        f"El pedido {number} de {order['client_name']}, por {format_ars(order['total_cents'])}, supera el crédito "
        f"disponible del cliente y está esperando tu autorización. Lo cargó {order['salesperson']}.\n\n"
        "Mientras no lo autorices el pedido no está confirmado: la mercadería queda reservada de forma "
        "provisoria y puede cambiar.\n\n"
        "Podés aprobarlo o rechazarlo en Nexo, en «Autorizaciones».\n\n" + SIGNATURE
    )
    return queue_to_permission(
        conn,
        key=f"credit-waiting:{order_id}",
        permission=CREDIT_OFFICER,
        subject=f"El pedido {number} espera tu autorización de crédito",
        body=body,
    )
