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
        "¿Cuánto puede exceder su límite un cliente PLATINO sin autorización?",
        "Marta y Laura",
        "nexo/orders (decisión de crédito), cola de crédito",
        "Todo exceso del límite, también de un platino, espera autorización de crédito.",
    ),
    Unknown(
        "RN-07",
        "¿Cuánto tiempo puede una reserva BLANDA retener stock?",
        "Marta",
        "stock_reservation.expires_at, cola de crédito, tablero de operaciones",
        "expires_at queda NULL: la reserva no vence; se muestra su antigüedad.",
    ),
    Unknown(
        "OUTBOX-RETENTION",
        "¿Cuánto tiempo se guardan los eventos del outbox ya entregados?",
        "Operaciones",
        "jobs/retention.py (OUTBOX_RETENTION_DAYS)",
        "Sin valor configurado no se borra ningún evento entregado.",
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
        "¿El método de entrega forma parte de la intención (huella ADR-006)?",
        "Responsable del Desarrollo",
        "nexo/orders/fingerprint.py (fingerprint_version)",
        "deliveryMethod queda fuera de la huella: cambiarlo con el mismo requestId no es conflicto.",
    ),
    Unknown(
        "RELAY-MAX-ATTEMPTS",
        "¿Cuántos intentos de entrega antes de FALLIDO?",
        "Operaciones",
        "RELAY_MAX_ATTEMPTS (8, propuesta inicial)",
        "Se usa 8 como propuesta a validar, configurable.",
    ),
    Unknown(
        "RELAY-TIMEOUT",
        "¿Qué timeout de entrega acepta cada proveedor?",
        "Operaciones y el proveedor fiscal",
        "RELAY_DELIVERY_TIMEOUT_S (5 s, propuesta inicial)",
        "Se usa 5 s como propuesta a validar, configurable.",
    ),
    Unknown(
        "OPS-THRESHOLDS",
        "¿Qué umbral de cada señal operativa es un día malo?",
        "Operaciones",
        "tablero /ops, deploy/prometheus/nexo-alerts.yml",
        "Se muestran los valores sin umbral. Las alertas solo avisan hechos (una entrega fallida sin decidir, "
        "un proceso que el supervisor dejó de reiniciar, un reinicio); las de antigüedad y cantidad de "
        "reinicios esperan un umbral registrado y no se disparan hasta entonces.",
    ),
    Unknown(
        "IDEMPOTENCY-KEY-RETENTION",
        "¿Cuánto tiempo debe guardarse la clave de un pedido (su requestId) para reconocer un reenvío?",
        "Marta y Operaciones",
        "tabla idempotency_keys (sin purga)",
        "Ninguna clave se borra: la tabla crece con cada pedido, una fila por pedido. Un formulario "
        "abierto toda la mañana o una integración que reintenta días después siguen reconociéndose.",
    ),
    Unknown(
        "RETURNS-AFTER-DISPATCH",
        "¿Cómo se devuelve mercadería de un pedido que ya salió del depósito?",
        "Marta y Laura",
        "nexo/orders/cancel.py y nexo/states.py (CANCELLABLE)",
        "Las devoluciones no están modeladas: un pedido despachado (en parte o todo) no se puede anular.",
    ),
    Unknown(
        "CANCEL-INVOICED",
        "¿Se puede anular un pedido FACTURADO sin el consentimiento del proveedor fiscal?",
        "Marta, el contador y el proveedor fiscal",
        "nexo/outbox/order_events.py (billing.intent_cancelled)",
        "Se anula mientras no salió nada y se pide la nota de crédito; la factura figura FACTURADO hasta que el "
        "proveedor la emite (ANULADA). Si la rechaza, queda una entrega fallida para decidir.",
    ),
    Unknown(
        "CREDIT-NOTE-UNKNOWN-INVOICE",
        "¿Qué responde el proveedor fiscal real a una nota de crédito de una factura que nunca emitió?",
        "Operaciones y el proveedor fiscal",
        "nexo/outbox/relay.py (ADR-017)",
        "Se supone lo que responden los simuladores (422 original_not_applied): la anulación queda RETIRADO.",
    ),
    Unknown(
        "STOCK-RECEIPTS",
        "¿Cómo entran a Nexo las compras recibidas y los conteos de stock?",
        "Marta y Sergio",
        "stock_level.on_hand, flask check (nexo/books.py)",
        "No están modelados: solo un despacho baja on_hand, y flask check marca cualquier cambio manual.",
    ),
    Unknown(
        "CREDIT-BALANCE",
        "¿Qué se hace con el saldo a favor de un cliente que pagó un pedido que después se anuló?",
        "Laura y Marta",
        "client.exposure_cents (migración 0100)",
        "La exposición queda negativa: el saldo a favor lo usan sus próximos pedidos; Nexo no reintegra nada.",
    ),
]
