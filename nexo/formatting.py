"""How every page shows money and time to people in Argentina (one place, so all pages agree)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

# Argentina keeps UTC-3 all year (no daylight saving since 2009); a fact, not a business setting.
ARGENTINA = timezone(timedelta(hours=-3), "ART")


def format_ars(cents: int | None) -> str:
    """Integer cents as pesos the way they are written in Argentina: 1250000 → '$ 12.500,00'."""
    if cents is None:
        return "—"
    sign = "-" if cents < 0 else ""
    pesos, centavos = divmod(abs(int(cents)), 100)
    return f"{sign}$ {pesos:,}".replace(",", ".") + f",{centavos:02d}"


def format_local(moment: datetime | None, *, seconds: bool = False) -> str:
    """A timestamp in Argentine time, day first: '14/03/2025 09:14' (or '09:14:05' with seconds)."""
    if moment is None:
        return "—"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(ARGENTINA).strftime("%d/%m/%Y %H:%M:%S" if seconds else "%d/%m/%Y %H:%M")
