"""How the credit pages write a waiting time (money and moments come from nexo.formatting)."""

from __future__ import annotations


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
