"""How every page shows money, moments and durations to people in Argentina (one place, so all pages agree).

init_app registers each one once for every template, under one name: `|money`, `|local_time`,
`|duration`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from flask import Flask

# Argentina keeps UTC-3 all year (no daylight saving since 2009); a fact, not a business setting.
ARGENTINA = timezone(timedelta(hours=-3), "ART")


def init_app(app: Flask) -> None:
    """Give every template `|money`, `|local_time` (`seconds=True` on the dead-letter pages) and `|duration`."""
    app.add_template_filter(format_ars, "money")
    app.add_template_filter(format_local, "local_time")
    app.add_template_filter(format_duration, "duration")


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
