"""Text from outside is made storable before it is written (guarantee 16): Postgres refuses NUL in text."""

from nexo.outbox.storable import ERROR_TEXT_LIMIT, storable_text


def test_nul_and_control_characters_are_removed_and_line_breaks_become_spaces():
    assert storable_text("rechazado\x00 por\x01\x1b el\x7f destino\x85") == "rechazado por el destino"
    assert storable_text("línea 1\r\nlínea\t2") == "línea 1  línea 2"


def test_lone_surrogates_are_removed_so_the_text_encodes_as_utf8():
    text = storable_text(b"caf\xe9 ok".decode("utf-8", errors="surrogateescape"))
    assert text == "caf ok"
    text.encode("utf-8")


def test_length_is_capped_with_an_ellipsis():
    capped = storable_text("x" * 10_000)
    assert len(capped) == ERROR_TEXT_LIMIT and capped.endswith("…")
    assert storable_text("corto", limit=10) == "corto"


def test_none_stays_none_and_readable_text_is_kept():
    assert storable_text(None) is None
    assert (
        storable_text('HTTP 400: {"error": "solicitud_rechazada"} ñandú €')
        == 'HTTP 400: {"error": "solicitud_rechazada"} ñandú €'
    )
