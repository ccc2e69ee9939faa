"""How the credit pages write money, ages and moments in Spanish (pure functions)."""

from __future__ import annotations

from datetime import datetime


def ars(cents: int | None) -> str:
    """Integer cents as Argentine pesos with thousands separators: 99000000 -> '$ 990.000,00'."""
    if cents is None:
        return "—"
    sign = "-" if cents < 0 else ""
    pesos, centavos = divmod(abs(int(cents)), 100)
    return f"{sign}$ {pesos:,}".replace(",", ".") + f",{centavos:02d}"


def duration(seconds: int | None) -> str:
    """A waiting time a person reads at a glance: '45 min', '3 h 05 min', '2 d 4 h'."""
    if seconds is None:
        return "—"
    minutes = max(0, int(seconds)) // 60
    if minutes < 1:
        return "menos de 1 min"
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def moment(value: datetime | None) -> str:
    """A timestamp as day/month/year hour:minute in the server's local time."""
    return value.astimezone().strftime("%d/%m/%Y %H:%M") if value else "—"
