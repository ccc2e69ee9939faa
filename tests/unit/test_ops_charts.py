"""The chart geometry and formats of /ops: pure functions, no server."""

import pytest

from nexo.formatting import format_duration
from nexo.ops import charts


@pytest.mark.parametrize("value, top", [(0, 2), (1, 2), (3, 4), (5, 6), (7, 10), (11, 20), (45, 60), (101, 200)])
def test_count_axis_tops_are_round_and_whole_at_half_height(value, top):
    assert charts.count_ceiling(value) == top
    assert charts.count_ceiling(value) / 2 == int(charts.count_ceiling(value) / 2)


@pytest.mark.parametrize(
    "seconds, top",
    [(0, 1), (0.004, 0.01), (0.096, 0.1), (0.3, 0.5), (50, 60), (2500, 3600), (10800, 10800), (10801, 21600), (10**6, 1209600)],
)
def test_duration_axis_tops_are_durations_a_person_reads(seconds, top):
    assert charts.nice_duration_ceiling(seconds) == top


@pytest.mark.parametrize(
    "seconds, text",
    [(None, "—"), (0, "0 s"), (0.0955, "96 ms"), (12.5, "12,5 s"), (61, "1 min 01 s"), (7260, "2 h 01 min"), (90000, "1 d 1 h")],
)
def test_durations_are_written_in_spanish_units(seconds, text):
    assert format_duration(seconds) == text


def test_a_bar_chart_draws_one_bar_per_hour_with_a_value_and_none_for_zero():
    values = [0] * 24
    values[23], values[0] = 3, 1
    chart = charts.bar_chart("c", values, charts.format_count, charts.count_ceiling)
    assert len(chart.bars) == 2 and not chart.empty
    newest = chart.bars[-1]
    assert newest["tip"] == "ahora: 3"
    assert newest["h"] == pytest.approx(chart.plot["h"] * 3 / 4, abs=0.2)  # axis top is 4
    assert chart.bars[0]["tip"] == "hace 23 h: 1"
    assert newest["x"] > chart.bars[0]["x"]


def test_an_all_zero_bar_chart_says_it_is_empty():
    assert charts.bar_chart("c", [0] * 24, charts.format_count).empty


def test_a_line_chart_skips_hours_without_data_and_names_each_series():
    p95 = [None] * 24
    p95[20], p95[23] = 0.05, 0.1
    chart = charts.line_chart("p95", {"p95": p95}, format_duration, charts.nice_duration_ceiling, bars_alignment=True)
    (line,) = chart.lines
    assert [d["tip"] for d in line["dots"]] == ["p95, hace 3 h: 50 ms", "p95, ahora: 100 ms"]
    assert line["dots"][1]["y"] == chart.plot["y"]  # 100 ms is the axis top
    assert line["points"].count(",") == 2


def test_a_line_chart_without_any_value_is_empty():
    assert charts.line_chart("x", {"a": [None] * 25}, format_duration).empty
