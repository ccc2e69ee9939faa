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
]
