"""How every page shows money, moments, durations and an order's state to people in Argentina, and reads the
money they type (one place, so all pages agree).

init_app registers each one once for every template, under one name: `|money`, `|local_time`,
`|duration`. States and reasons in words are nexo/vocabulary.py's.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from flask import Flask
from markupsafe import Markup

# Argentina keeps UTC-3 all year (no daylight saving since 2009); a fact, not a business setting.
ARGENTINA = timezone(timedelta(hours=-3), "ART")


def init_app(app: Flask) -> None:
    """Give every template `|money`, `|local_time` (`seconds=True` on the dead-letter pages) and `|duration`
    (the words for states and reasons are nexo/vocabulary.py's)."""
    app.add_template_filter(money_html, "money")
    app.add_template_filter(format_local, "local_time")
    app.add_template_filter(format_duration, "duration")
    app.add_template_filter(format_order_number, "order_number")


def format_ars(cents: int | None) -> str:
    """Integer cents as pesos the way they are written in Argentina: 1250000 → '$ 12.500,00'."""
    if cents is None:
        return "—"
    sign = "-" if cents < 0 else ""
    pesos, centavos = divmod(abs(int(cents)), 100)
    return f"{sign}$ {pesos:,}".replace(",", ".") + f",{centavos:02d}"


def money_html(cents: int | None) -> Markup:
    """format_ars for a page: one unbreakable piece, so "$" never wraps away from its amount (ADR-021)."""
    return Markup('<span class="amount">{}</span>').format(format_ars(cents))


# Pesos as people write them in Argentina: "1234,56", "1.234,56", "1.234", "$ 50" — dots between groups
# of three digits, a comma before at most two decimals, ASCII digits only ("١٢" is not a number here).
_ARS = re.compile(r"(?P<pesos>[0-9]{1,3}(?:\.[0-9]{3})+|[0-9]+)(?:,(?P<cents>[0-9]+))?")
_ARS_DIGITS = 16  # ten trillion pesos have 14 digits: past this a typo, not an amount (and int() stays cheap)


class MoneyInputError(ValueError):
    """Text that is not an amount of pesos; the message says why, in Spanish, for the form."""


def parse_ars(text: str) -> int:
    """Pesos as people write them ("1.234,56", "1234,56", "$ 50") → integer cents; MoneyInputError otherwise.

    Refused: a sign, more than two decimals, another format ("1,234.56", "1234.56", "1 234"), no digits.
    Zero is an amount (a limit may be 0); whether it is allowed is the caller's rule.
    """
    cleaned = text.strip()
    if cleaned.startswith("$"):
        cleaned = cleaned[1:].lstrip()
    if cleaned.startswith(("-", "\u2212")):
        raise MoneyInputError("El importe no puede ser negativo.")
    if not cleaned:
        raise MoneyInputError("Escribí un importe, por ejemplo 1.234,56.")
    if len(cleaned) > _ARS_DIGITS + 8:
        raise MoneyInputError("El importe es demasiado grande.")
    found = _ARS.fullmatch(cleaned)
    if found is None:
        raise MoneyInputError("Escribí el importe como 1.234,56 o 1234,56 (coma para los centavos, puntos para los miles).")
    cents = found.group("cents") or ""
    if len(cents) > 2:
        raise MoneyInputError("El importe admite hasta dos decimales (centavos).")
    pesos = found.group("pesos").replace(".", "").lstrip("0") or "0"
    if len(pesos) > _ARS_DIGITS:
        raise MoneyInputError("El importe es demasiado grande.")
    return int(pesos) * 100 + int(cents.ljust(2, "0"))


def format_local(moment: datetime | None, *, seconds: bool = False) -> str:
    """A timestamp in Argentine time, day first: '14/03/2025 09:14' (or '09:14:05' with seconds)."""
    if moment is None:
        return "—"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(ARGENTINA).strftime("%d/%m/%Y %H:%M:%S" if seconds else "%d/%m/%Y %H:%M")


def format_duration(seconds: float | None, *, to_the_minute: bool = False) -> str:
    """A duration the way a person reads it: '850 ms', '12 s', '3 min 05 s', '2 h 10 min', '3 d 4 h'.

    to_the_minute is for waiting times read at a glance (the credit queue): '45 min', 'menos de 1 min'.
    """
    if seconds is None:
        return "—"
    if to_the_minute:
        minutes = max(0, int(seconds)) // 60
        if minutes < 1:
            return "menos de 1 min"
        if minutes < 60:
            return f"{minutes} min"
    else:
        if seconds == 0:
            return "0 s"
        if seconds < 1:
            return f"{seconds * 1000:.0f} ms"
        if seconds < 60:
            text = f"{seconds:.1f}"
            return (text[:-2] if text.endswith(".0") else text.replace(".", ",")) + " s"
        minutes, secs = divmod(int(seconds), 60)
        if minutes < 60:
            return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


# Order numbers (ADR-020): "P-" and at least six digits, as people read them over the phone.
ORDER_NUMBER_PREFIX = "P-"
_ORDER_NUMBER = re.compile(r"(?:[Pp]\s*-?\s*|#|[Nn][°º.]?\s*)?0*(?P<digits>[0-9]{1,18})")


def format_order_number(number: int | None) -> str:
    """123 → 'P-000123' (more digits once past a million: 'P-1000000')."""
    return "—" if number is None else f"{ORDER_NUMBER_PREFIX}{int(number):06d}"


def parse_order_number(text: str) -> int | None:
    """The number in what a person typed ('P-000123', 'p123', '#123', '123'); None when it is not one."""
    found = _ORDER_NUMBER.fullmatch(text.strip())
    if found is None:
        return None
    number = int(found["digits"] or "0")
    return number if 0 < number < 2**63 else None
