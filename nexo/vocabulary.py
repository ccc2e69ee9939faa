"""The words people read for Nexo's codes: one place for every state, reason, event and open question (ADR-021).

Pages show these words; the codes themselves stay in `data-*` attributes, where tests and CONTRACT.md read
them. init_app registers one Jinja filter per kind (`|order_status`, `|reason`, `|delivery_error`, …), so a
template never spells a code for people and never keeps a dict of its own.
"""

from __future__ import annotations

import contextlib
import json
import re

from flask import Flask

from nexo.states import (
    AttemptOutcome,
    BillingStatus,
    DeadLetterStatus,
    EventStatus,
    OrderStatus,
    ReservationKind,
)

ORDER_STATUS = {
    OrderStatus.CONFIRMADO: "Confirmado",
    OrderStatus.PENDIENTE_AUTORIZACION: "Esperando autorización de crédito",
    OrderStatus.RECHAZADO: "Rechazado por crédito",
    OrderStatus.ANULADO: "Anulado",
    OrderStatus.DESPACHADO_PARCIAL: "Despachado en parte",
    OrderStatus.DESPACHADO: "Despachado",
}
BILLING_STATUS = {
    BillingStatus.NO_APLICA: "No corresponde",
    BillingStatus.PENDIENTE_FACTURACION: "Factura pendiente",
    BillingStatus.FACTURADO: "Facturado",
    BillingStatus.ANULADA: "Factura anulada con nota de crédito",
}
# What a credit officer decided, on the decided list (the order's status after the decision).
CREDIT_DECISION = {OrderStatus.CONFIRMADO: "Autorizado", OrderStatus.RECHAZADO: "Rechazado"}
RESERVATION_KIND = {
    ReservationKind.BLANDA: "Provisoria (espera crédito)",
    ReservationKind.FIRME: "Firme",
}
TIER = {"PLATINO": "Platino", "REGULAR": "Regular"}
EVENT_TYPE = {
    "order.handoff_requested": "Aviso al depósito para preparar",
    "billing.intent_recorded": "Pedido de factura al servicio fiscal",
    "order.handoff_cancelled": "Aviso al depósito de la anulación",
    "billing.intent_cancelled": "Pedido de nota de crédito al servicio fiscal",
    "webhook.notice": "Aviso a la integración que cargó el pedido",
}
EVENT_STATUS = {
    EventStatus.PENDIENTE: "en camino",
    EventStatus.ENTREGADO: "entregado",
    EventStatus.FALLIDO: "no se pudo entregar",
    EventStatus.RETIRADO: "no se envió",
}
ATTEMPT_OUTCOME = {
    AttemptOutcome.ENTREGADO: "Entregado",
    AttemptOutcome.REINTENTO: "Falló; se reintenta",
    AttemptOutcome.FALLIDO: "Falló; no se reintenta más",
    AttemptOutcome.DESCARTADO_POR_LEASE: "Otro proceso lo tomó a su cargo",
    AttemptOutcome.SIN_RESULTADO: "Se interrumpió sin resultado",
    AttemptOutcome.RETIRADO: "No se envió",
}
DEAD_LETTER_STATUS = {
    DeadLetterStatus.PENDING: "Pendiente",
    DeadLetterStatus.RESOLVED: "Reprocesada",
    DeadLetterStatus.DISCARDED: "Descartada",
}
DESTINATION = {
    "fiscal": "Servicio fiscal (facturación)",
    "warehouse": "Depósito (entregas)",
    "webhook": "Avisos a integraciones",
}
# The destination as the subject of a sentence about a delivery error.
_DESTINATION_SUBJECT = {
    "fiscal": "El servicio fiscal",
    "warehouse": "El sistema del depósito",
    "webhook": "El sistema de la integración",
}
# Business refusals and conflicts (CONTRACT.md's reasons), in the words of the person who met them.
REASON = {
    "insufficient_stock": "No hay stock suficiente en el depósito elegido.",
    "invalid_sku": "El artículo no existe en el catálogo.",
    "price_source_unavailable": "El artículo no tiene precio autorizado: no se puede vender hasta que tenga uno.",
    "request_id_reused": "Este formulario ya se usó para otro pedido.",
    "order_not_cancellable": "El pedido ya no se puede anular.",
    "order_not_dispatchable": "El pedido no está listo para despachar.",
    "exceeds_remaining": "Es más de lo que falta despachar.",
    "payment_exceeds_exposure": "El pago es mayor que lo que el cliente debe.",
}
# What happened to an order, or a dead letter (audit_log.action).
AUDIT_ACTION = {
    "credit.approved": "autorizó el crédito",
    "credit.rejected": "rechazó el pedido",
    "order.cancelled": "anuló el pedido",
    "order.dispatched": "registró un despacho",
    "dead_letter.opened": "Cayó en entregas fallidas",
    "dead_letter.replayed": "Reprocesada",
    "dead_letter.discarded": "Descartada",
    "dead_letter.key_checked": "Se consultó al destino",
    "dead_letter.viewed": "Consultada",
}
# How create_order ended (nexo/orders/commands.py), on the operations page.
ORDER_OUTCOME = {
    "confirmed": "confirmados",
    "pending_authorization": "esperando crédito",
    "rejected": "rechazados",
    "replayed": "reenvíos del mismo pedido",
    "conflict": "formularios reusados",
    "invalid": "con datos inválidos",
}
# supervisord's process states (ADR-013).
PROCESS_STATE = {
    "RUNNING": "Funcionando",
    "STARTING": "Arrancando",
    "BACKOFF": "Reintentando el arranque",
    "STOPPING": "Deteniéndose",
    "STOPPED": "Detenido",
    "EXITED": "Terminó",
    "FATAL": "Detenido por fallas repetidas",
    "UNKNOWN": "Estado desconocido",
}
# Nexo's programs (deploy/supervisor/nexo.conf, scripts/stack.py), by the start of their name.
PROGRAM = {
    "web": "Servidor web",
    "worker": "Entrega de avisos",
    "sweeper": "Barrido de avisos pendientes",
    "retention": "Limpieza programada",
    "fiscal": "Simulador del servicio fiscal",
    "warehouse": "Simulador del depósito",
    "process_events": "Vigilancia de procesos",
    "maintenance": "Mantenimiento",
}
# The open questions (nexo/unknowns.py keys, docs/unknowns.md) as a salesperson reads them.
OPEN_QUESTION = {
    "RN-02": "Todavía no está decidido cuánto puede pasarse de su límite un cliente Platino sin autorización; "
    "lo deciden Marta y Laura. Mientras tanto, todo exceso espera a Crédito.",
    "RN-07": "Todavía no está decidido cuánto tiempo puede una reserva provisoria retener stock; lo decide Marta. "
    "Mientras tanto no vence sola.",
    "FINGERPRINT-DELIVERY": "Todavía no está decidido si el método de entrega cuenta como parte del pedido; lo decide "
    "el responsable del desarrollo. Mientras tanto, cambiarlo al reintentar no cuenta como otro pedido.",
    "OPS-THRESHOLDS": "Todavía no está decidido qué valor de cada señal es un día malo; lo decide Operaciones. "
    "Por eso esta página muestra valores sin colores de alarma.",
    "OUTBOX-RETENTION": "Todavía no está decidido cuánto tiempo se guardan los avisos ya entregados; lo decide "
    "Operaciones. Mientras tanto no se borra ninguno.",
}

_WORDS: dict[str, tuple[dict, str]] = {
    "order_status": (ORDER_STATUS, "Estado desconocido"),
    "billing_status": (BILLING_STATUS, "Sin dato"),
    "credit_decision": (CREDIT_DECISION, "Otra decisión"),
    "reservation_kind": (RESERVATION_KIND, "Otra reserva"),
    "tier": (TIER, "Sin categoría"),
    "event_type": (EVENT_TYPE, "Otro aviso"),
    "event_status": (EVENT_STATUS, "estado desconocido"),
    "attempt_outcome": (ATTEMPT_OUTCOME, "Sin resultado"),
    "dead_letter_status": (DEAD_LETTER_STATUS, "Estado desconocido"),
    "destination": (DESTINATION, "Otro destino"),
    "reason": (REASON, "No se pudo hacer."),
    "audit_action": (AUDIT_ACTION, "otra acción"),
    "order_outcome": (ORDER_OUTCOME, "otros"),
    "process_state": (PROCESS_STATE, "Estado desconocido"),
    "open_question": (OPEN_QUESTION, "Hay una decisión de negocio todavía abierta."),
}


def words(kind: str, code) -> str:
    """The words for `code` of a kind (e.g. words("order_status", "CONFIRMADO") → "Confirmado").

    A code without words gets the kind's neutral words, never the code itself: a page never shows a code.
    """
    table, fallback = _WORDS[kind]
    if code is None or code == "":
        return "—"
    return table.get(code, fallback)


def program(name: str | None) -> str:
    """A supervised program's name for people: 'worker:worker_1' → 'Entrega de avisos (2)'."""
    if not name:
        return "—"
    base, _, instance = name.partition(":")
    for prefix, label in PROGRAM.items():
        if base.startswith(prefix):
            number = re.search(r"_(\d+)$", instance or "")
            return f"{label} ({int(number.group(1)) + 1})" if number else label
    return "Otro proceso"


_ATTEMPTS = re.compile(r"^agotados (?P<n>\d+) intentos; último error: (?P<rest>.*)$", re.S)
# "HTTP 503: <body>" (nexo/outbox/destinations.py), or a status line "422 Unprocessable Entity: <text>".
_HTTP = re.compile(r"^(?:HTTP (?P<status>\d{3})|(?P<line>\d{3})(?: [A-Za-z]+)*:)\s*:?\s*(?P<said>.*)$", re.S)
# What a destination said, when it is a sentence a person can read (not a code, not a JSON body).
_SAID_KEYS = ("detail", "message", "title", "error")
_ANSWER = re.compile(r"^respuesta (?P<status>\d{3})\b")


def delivery_error(text: str | None, destination: str | None = None) -> str:
    """A delivery's last error as a sentence: 'HTTP 503: {…}' → 'El servicio fiscal respondió con un error (503).'

    The raw text stays for admins in a collapsed <details>; this is what everybody reads.
    """
    if not text:
        return "Sin detalle del error."
    subject = _DESTINATION_SUBJECT.get(destination or "", "El destino")
    spent = _ATTEMPTS.match(text)
    if spent:
        return f"Se agotaron {spent['n']} intentos. {delivery_error(spent['rest'], destination)}"
    if http := _HTTP.match(text):
        status = int(http["status"] or http["line"])
        said = _what_it_said(http["said"])
        sentence = f"{subject} respondió con un error ({status})" if status >= 500 else f"{subject} rechazó el aviso ({status})"
        return f"{sentence}: «{said}»." if said else f"{sentence}."
    if answer := _ANSWER.match(text):
        return f"{subject} respondió ({answer['status']}) sin los datos esperados."
    head = text.split(":", 1)[0].strip()
    sentences = {
        "Timeout": f"{subject} no respondió a tiempo.",
        "ConnectError": f"No se pudo conectar con {_lower(subject)}.",
        "ReadError": f"Se cortó la conexión con {_lower(subject)}.",
        "RemoteProtocolError": f"{subject} dio una respuesta que Nexo no entiende.",
        "BadAnswer": f"{subject} dio una respuesta que Nexo no entiende.",
    }
    if head in sentences:
        return sentences[head]
    if text.startswith("el intento terminó"):
        return "El intento se interrumpió sin registrar su resultado."
    return "La entrega falló por un error inesperado."


def _what_it_said(body: str) -> str | None:
    # A JSON error body's human message ({"detail": "CUIT inválido"}), or plain text; never a code or JSON.
    text = body.strip()
    with contextlib.suppress(ValueError):
        found = json.loads(text)
        text = next((found[key] for key in _SAID_KEYS if isinstance(found, dict) and isinstance(found.get(key), str)), "")
    if not text or len(text) > 200 or re.search(r"[_{}<>\[\]]|\b[a-z]+[A-Z]", text) or " " not in text.strip():
        return None
    return text.strip()


def error_signature(signature: str | None) -> str:
    """A dead letter's error group ('fiscal:503', 'warehouse:Timeout') in words."""
    if not signature:
        return "—"
    destination, _, cause = signature.partition(":")
    where = {"fiscal": "Servicio fiscal", "warehouse": "Depósito"}.get(destination, "Otro destino")
    if cause.isdigit():
        return f"{where} · error {cause}"
    causes = {
        "Timeout": "sin respuesta a tiempo",
        "ConnectError": "sin conexión",
        "ReadError": "conexión cortada",
        "RemoteProtocolError": "respuesta ilegible",
        "BadAnswer": "respuesta incompleta",
    }
    return f"{where} · {causes.get(cause, 'otro error')}"


def _lower(subject: str) -> str:
    return subject[0].lower() + subject[1:]


def init_app(app: Flask) -> None:
    """Register `|order_status`, `|reason`, … (one per kind of code), `|program`, `|delivery_error` and
    `|error_signature` for every template."""
    for kind in _WORDS:
        app.add_template_filter(lambda code, kind=kind: words(kind, code), kind)
    app.add_template_filter(program, "program")
    app.add_template_filter(delivery_error, "delivery_error")
    app.add_template_filter(error_signature, "error_signature")
