"""The words people read for Nexo's codes (nexo/vocabulary.py, ADR-021)."""

from __future__ import annotations

import pytest

from nexo import vocabulary
from nexo.states import AttemptOutcome, BillingStatus, DeadLetterStatus, EventStatus, OrderStatus, ReservationKind
from nexo.unknowns import UNKNOWNS


@pytest.mark.parametrize(
    ("kind", "codes"),
    [
        ("order_status", OrderStatus),
        ("billing_status", BillingStatus),
        ("event_status", EventStatus),
        ("attempt_outcome", AttemptOutcome),
        ("reservation_kind", ReservationKind),
        ("dead_letter_status", DeadLetterStatus),
    ],
)
def test_every_state_has_words_of_its_own(kind, codes):
    table, _ = vocabulary._WORDS[kind]
    assert set(table) == set(codes)
    assert not {vocabulary.words(kind, code) for code in codes} & {str(code) for code in codes}


def test_a_code_without_words_gets_neutral_words_never_the_code():
    assert vocabulary.words("order_status", "NUEVO_ESTADO") == "Estado desconocido"
    assert vocabulary.words("reason", "some_new_reason") == "No se pudo hacer."
    assert vocabulary.words("order_status", None) == "—"


def test_the_open_questions_shown_on_pages_are_in_the_register():
    assert set(vocabulary.OPEN_QUESTION) <= {u.key for u in UNKNOWNS}
    assert all(text.startswith("Todavía no está decidido") for text in vocabulary.OPEN_QUESTION.values())


@pytest.mark.parametrize(
    ("raw", "sentence"),
    [
        (
            'HTTP 503: {"detail": "servicio no disponible"}',
            "El servicio fiscal respondió con un error (503): «servicio no disponible».",
        ),
        ('HTTP 400: {"error": "original_not_applied"}', "El servicio fiscal rechazó el aviso (400)."),
        ("HTTP 502: <html>Bad gateway</html>", "El servicio fiscal respondió con un error (502)."),
        ("Timeout: no answer within 5.0 s", "El servicio fiscal no respondió a tiempo."),
        ("ConnectError: connection refused", "No se pudo conectar con el servicio fiscal."),
        (
            "agotados 8 intentos; último error: HTTP 503: {}",
            "Se agotaron 8 intentos. El servicio fiscal respondió con un error (503).",
        ),
        ("el intento terminó sin que se registrara su resultado", "El intento se interrumpió sin registrar su resultado."),
        ("KeyError: 'x'", "La entrega falló por un error inesperado."),
        (None, "Sin detalle del error."),
    ],
)
def test_a_delivery_error_reads_as_a_sentence(raw, sentence):
    assert vocabulary.delivery_error(raw, "fiscal") == sentence


def test_error_groups_and_programs_read_as_words():
    assert vocabulary.error_signature("fiscal:503") == "Servicio fiscal · error 503"
    assert vocabulary.error_signature("warehouse:Timeout") == "Depósito · sin respuesta a tiempo"
    assert vocabulary.program("worker:worker_1") == "Entrega de avisos (2)"
    assert vocabulary.program("sweeper") == "Barrido de avisos pendientes"
