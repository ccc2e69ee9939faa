"""Geometry for the small server-rendered SVG charts of /ops (no JavaScript, no CDN: the CSP allows neither).

Pure functions: they turn a series into rectangles, polylines and labels; templates/ops/_charts.html
draws them. Values are never invented: an hour with no data has no bar and no point.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

WIDTH, HEIGHT = 480, 150
LEFT, RIGHT, TOP, BOTTOM = 56, 8, 10, 22  # margins for the axis labels
SERIES_CLASSES = ("series-a", "series-b", "series-c")


@dataclass(frozen=True)
class Chart:
    """Everything a template needs to draw one chart."""

    title: str
    width: int
    height: int
    plot: dict  # x, y, w, h of the plotting area
    y_ticks: list[dict]  # y, label
    x_ticks: list[dict]  # x, label
    bars: list[dict] = field(default_factory=list)  # x, y, w, h, tip
    lines: list[dict] = field(default_factory=list)  # css, name, points ("x,y x,y"), dots [{x, y, tip}]
    empty: bool = False


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^k that is at least value (1 for zero or less)."""
    if value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        candidate = step * 10**exponent
        if candidate >= value * (1 - 1e-9):
            return float(candidate)
    return float(10 ** (exponent + 1))


def count_ceiling(value: float) -> float:
    """The smallest 2, 4, 6 or 10 × 10^k that is at least value: a whole number at half height too."""
    if value <= 2:
        return 2.0
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 4, 6, 10):
        if step * 10**exponent >= value:
            return float(step * 10**exponent)
    return float(10 ** (exponent + 1))


# Round axis tops for durations, in seconds: a person reads "30 min", not "27 min 46 s".
_DURATION_STEPS = [
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.5,
    1,
    2,
    5,
    10,
    15,
    30,
    60,
    120,
    300,
    600,
    900,
    1800,
    3600,
    7200,
    10800,
    21600,
    43200,
    86400,
    172800,
    345600,
    604800,
]


def nice_duration_ceiling(seconds: float) -> float:
    """The smallest round duration (10 ms … 1 week, then whole weeks) that is at least seconds (1 s for 0)."""
    if seconds <= 0:
        return 1.0
    for step in _DURATION_STEPS:
        if step >= seconds:
            return float(step)
    return float(math.ceil(seconds / 604800) * 604800)


def hours_ago_label(hours: int) -> str:
    """'ahora' for 0, else 'hace N h'."""
    return "ahora" if hours == 0 else f"hace {hours} h"


def _frame(title: str, top_value: float, fmt: Callable[[float], str], points: int, *, bars: bool):
    plot = {"x": LEFT, "y": TOP, "w": WIDTH - LEFT - RIGHT, "h": HEIGHT - TOP - BOTTOM}
    y_ticks = [{"y": round(plot["y"] + plot["h"] * (1 - f), 1), "label": fmt(top_value * f)} for f in (0, 0.5, 1)]
    x_ticks = []
    for hours in (24, 18, 12, 6, 0):
        index = points - 1 - hours
        if 0 <= index < points:
            x_ticks.append(
                {
                    "x": round(_x(plot, index, points, bars=bars), 1),
                    "label": "ahora" if hours == 0 else f"-{hours} h",
                    "anchor": "end" if hours == 0 and not bars else "middle",
                }
            )
    return plot, y_ticks, x_ticks


def _x(plot: dict, index: int, points: int, *, bars: bool) -> float:
    if bars:
        return plot["x"] + plot["w"] * (index + 0.5) / points
    return plot["x"] + plot["w"] * index / max(1, points - 1)


def _y(plot: dict, value: float, top_value: float) -> float:
    return plot["y"] + plot["h"] * (1 - min(value, top_value) / top_value)


def bar_chart(
    title: str, values: Sequence[float], fmt: Callable[[float], str], ceiling: Callable[[float], float] = nice_ceiling
) -> Chart:
    """One bar per hour, oldest first, the last bar being the hour ending now."""
    top_value = ceiling(max(values, default=0))
    plot, y_ticks, x_ticks = _frame(title, top_value, fmt, len(values), bars=True)
    slot = plot["w"] / max(1, len(values))
    bars = []
    for index, value in enumerate(values):
        if not value:
            continue
        y = _y(plot, value, top_value)
        bars.append(
            {
                "x": round(plot["x"] + slot * index + slot * 0.15, 1),
                "y": round(y, 1),
                "w": round(slot * 0.7, 1),
                "h": round(plot["y"] + plot["h"] - y, 1),
                "tip": f"{hours_ago_label(len(values) - 1 - index)}: {fmt(value)}",
            }
        )
    return Chart(title, WIDTH, HEIGHT, plot, y_ticks, x_ticks, bars=bars, empty=not bars)


def line_chart(
    title: str,
    series: Mapping[str, Sequence[float | None]],
    fmt: Callable[[float], str],
    ceiling: Callable[[float], float] = nice_ceiling,
    *,
    bars_alignment: bool = False,
) -> Chart:
    """One polyline per named series; None values break nothing and draw no point.

    With bars_alignment the points sit in the middle of hourly slots (hourly aggregates); otherwise
    they are instants, the last one being now.
    """
    points = max((len(v) for v in series.values()), default=0)
    known = [v for values in series.values() for v in values if v is not None]
    top_value = ceiling(max(known, default=0))
    plot, y_ticks, x_ticks = _frame(title, top_value, fmt, points, bars=bars_alignment)
    lines = []
    for css, (name, values) in zip(SERIES_CLASSES, series.items(), strict=False):
        dots = [
            {
                "x": round(_x(plot, i, points, bars=bars_alignment), 1),
                "y": round(_y(plot, v, top_value), 1),
                "tip": f"{name}, {hours_ago_label(points - 1 - i)}: {fmt(v)}",
            }
            for i, v in enumerate(values)
            if v is not None
        ]
        lines.append({"css": css, "name": name, "dots": dots, "points": " ".join(f"{d['x']},{d['y']}" for d in dots)})
    return Chart(title, WIDTH, HEIGHT, plot, y_ticks, x_ticks, lines=lines, empty=not known)


def format_count(value: float) -> str:
    """A count as an integer (axis labels of count charts)."""
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}".replace(".", ",")
