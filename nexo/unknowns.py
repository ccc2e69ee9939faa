"""The register of unknowns: business decisions still open (docs/unknowns.md).

docs/unknowns.md explains each one; the operations page lists these same entries so that nobody
mistakes a placeholder for a decision. A test keeps the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Unknown:
    """One open decision, who owns it and where the code waits for it."""

    key: str
    question: str
    owner: str
    waits_in: str
    meanwhile: str


UNKNOWNS = [
    Unknown(
        "RN-02",
        "¿Cuánto puede pasarse de su límite un cliente Platino sin autorización?",
        "Marta y Laura",
        "nexo/orders (decisión de crédito), cola de crédito",
        "Todo exceso del límite, también de un Platino, espera autorización de crédito.",
    ),
    Unknown(
        "RN-07",
        "¿Cuánto tiempo puede una reserva provisoria (la de un pedido que espera crédito) retener stock?",
        "Marta",
        "stock_reservation.expires_at, cola de crédito, tablero de operaciones",
        "La reserva no vence sola; se muestra su antigüedad.",
    ),
    Unknown(
        "OUTBOX-RETENTION",
        "¿Cuánto tiempo se guardan los avisos ya entregados al depósito y al servicio fiscal?",
        "Operaciones",
        "jobs/retention.py (OUTBOX_RETENTION_DAYS)",
        "Mientras no haya un plazo configurado no se borra ningún aviso entregado.",
    ),
    Unknown(
        "CATALOG-STALENESS",
        "¿Qué antigüedad de una réplica del catálogo acepta el negocio?",
        "Marta",
        "nexo/orders (precios y stock se leen de la base principal)",
        "No se usa réplica: precio y stock salen siempre de la base principal.",
    ),
    Unknown(
        "FINGERPRINT-DELIVERY",
        "¿El método de entrega cuenta como parte del pedido al reconocer un reenvío del mismo formulario?",
        "Responsable del Desarrollo",
        "nexo/orders/fingerprint.py (fingerprint_version)",
        "No cuenta: cambiarlo al reenviar el mismo formulario no es otro pedido.",
    ),
    Unknown(
        "RELAY-MAX-ATTEMPTS",
        "¿Cuántas veces se intenta entregar un aviso antes de darlo por fallido?",
        "Operaciones",
        "RELAY_MAX_ATTEMPTS (8, propuesta inicial)",
        "Se intenta 8 veces, como propuesta a validar; se puede cambiar.",
    ),
    Unknown(
        "RELAY-TIMEOUT",
        "¿Cuánto se espera la respuesta de cada proveedor antes de reintentar?",
        "Operaciones y el proveedor fiscal",
        "RELAY_DELIVERY_TIMEOUT_S (5 s, propuesta inicial)",
        "Se esperan 5 segundos, como propuesta a validar; se puede cambiar.",
    ),
    Unknown(
        "OPS-THRESHOLDS",
        "¿Qué umbral de cada señal operativa es un día malo?",
        "Operaciones",
        "tablero /ops, deploy/prometheus/nexo-alerts.yml",
        "Se muestran los valores sin umbral. Las alertas solo avisan hechos (una entrega fallida sin decidir, "
        "un proceso que dejó de reiniciarse solo, un reinicio); las de antigüedad y cantidad de "
        "reinicios esperan un umbral decidido y no se disparan hasta entonces.",
    ),
    Unknown(
        "IDEMPOTENCY-KEY-RETENTION",
        "¿Cuánto tiempo debe recordarse cada formulario enviado para reconocer un reenvío del mismo pedido?",
        "Marta y Operaciones",
        "tabla idempotency_keys (sin purga)",
        "No se olvida ninguno: se guarda un registro por pedido. Un formulario "
        "abierto toda la mañana o una integración que reintenta días después siguen reconociéndose.",
    ),
    Unknown(
        "RETURNS-AFTER-DISPATCH",
        "¿Cómo se devuelve mercadería de un pedido que ya salió del depósito?",
        "Marta y Laura",
        "nexo/orders/cancel.py y nexo/states.py (CANCELLABLE)",
        "Las devoluciones no están modeladas: un pedido despachado (en parte o todo) no se puede anular. "
        "Propuesta de Nexo, pendiente de Marta y Laura: la devolución como documento propio que suma al stock, "
        "baja la deuda y pide una nota de crédito por lo devuelto.",
    ),
    Unknown(
        "CANCEL-INVOICED",
        "¿Se puede anular un pedido ya facturado sin el consentimiento del proveedor fiscal?",
        "Marta, el contador y el proveedor fiscal",
        "nexo/outbox/order_events.py (billing.intent_cancelled)",
        "Se anula mientras no salió nada y se pide la nota de crédito; la factura figura vigente hasta que el "
        "proveedor emite la nota. Si la rechaza, queda una entrega fallida para decidir.",
    ),
    Unknown(
        "CREDIT-NOTE-UNKNOWN-INVOICE",
        "¿Qué responde el proveedor fiscal real a una nota de crédito de una factura que nunca emitió?",
        "Operaciones y el proveedor fiscal",
        "nexo/outbox/relay.py (ADR-017)",
        "Se supone lo que responden los simuladores (que no hay nada que anular): la anulación no se envía.",
    ),
    Unknown(
        "STOCK-RECEIPTS",
        "¿Cómo entran a Nexo las compras recibidas y los conteos de stock?",
        "Marta y Sergio",
        "stock_level.on_hand, flask check (nexo/books.py)",
        "No están en Nexo: solo un despacho baja el stock, y el control de stock marca cualquier cambio manual.",
    ),
    Unknown(
        "CREDIT-BALANCE",
        "¿Qué se hace con el saldo a favor de un cliente que pagó un pedido que después se anuló?",
        "Laura y Marta",
        "client.exposure_cents (migración 0100)",
        "Propuesta pendiente de Laura y Marta (lo que Nexo hace hoy): la deuda queda negativa, el saldo a favor lo "
        "usan sus próximos pedidos y Nexo no reintegra nada.",
    ),
]
