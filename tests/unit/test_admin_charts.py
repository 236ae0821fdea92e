"""The admin's server-drawn stacked bar chart: its scale, its stacking and its words."""

from __future__ import annotations

import pytest

from litejobs.admin.charts import (
    BOTTOM,
    GREEN,
    HEIGHT,
    PALETTE,
    VERMILLION,
    ceiling,
    colors_for,
    duration_top,
    lines,
    stacked_bars,
    text_width,
)


@pytest.mark.parametrize(
    ("value", "top"), [(0, 1), (1, 1), (2, 2), (3, 5), (7, 10), (11, 20), (250, 500), (1001, 2000)]
)
def test_the_scale_tops_at_one_two_or_five_times_a_power_of_ten(value, top):
    assert ceiling(value) == top


def test_series_stack_bottom_up_in_the_order_given_and_scale_to_the_tallest_column():
    chart = stacked_bars(
        [("10:00", {"a": 2, "b": 3}), ("11:00", {"b": 10}), ("12:00", {})],
        ["a", "b"],
        title="Drops",
        short_labels=["10", "11", "12"],
        label_every=2,
    )
    first_a, first_b, second_b = chart.bars
    assert (first_a.series, first_b.series, second_b.series) == ("a", "b", "b")
    assert first_a.y + first_a.height == HEIGHT - BOTTOM  # on the x axis
    assert first_b.y + first_b.height == pytest.approx(first_a.y)  # on top of a
    assert second_b.height == pytest.approx(2 * (first_a.height + first_b.height))  # top is 10
    assert [t.label for t in chart.x_ticks] == ["10", "12"]
    assert [t.label for t in chart.y_ticks] == ["0", "5", "10"]
    assert [(s.name, s.color, s.total) for s in chart.series] == [
        ("a", PALETTE[0], 2),
        ("b", PALETTE[1], 13),
    ]
    assert chart.description == "From 10:00 to 12:00: a 2, b 13."
    assert first_b.title == "10:00: 3 b"


def test_a_chart_of_nothing_says_so():
    chart = stacked_bars([("10:00", {"a": 0})], ["a"], title="Drops")
    assert chart.bars == [] and chart.description == "From 10:00 to 10:00: none."
    assert stacked_bars([], ["a"], title="Drops").description == "No periods to show."


def _seconds(value: float) -> str:
    minutes, seconds = divmod(int(value), 60)
    return f"{minutes}m {seconds}s" if minutes else f"{seconds}s"


def test_the_y_axis_has_room_for_its_longest_label_and_x_labels_stay_inside():
    """A label reaching past the drawing's left edge is cut ("16m 40s" read "6m 40s")."""
    chart = lines(
        [(f"{hour:02}:00", {"p95": 1000.0 if hour == 3 else 5.0}) for hour in range(24)],
        ["p95"],
        title="Wait",
        fmt=_seconds,
        label_every=4,
    )
    assert "16m 40s" in [tick.label for tick in chart.y_ticks]
    for tick in chart.y_ticks:
        assert text_width(tick.label) <= chart.label_x, tick  # right-aligned at label_x
    for tick in chart.x_ticks:
        half = text_width(tick.label) / 2
        assert tick.position - half >= 0 and tick.position + half <= chart.width, tick
    assert chart.font >= 11


def test_a_duration_axis_tops_at_a_duration_people_count_in():
    assert [duration_top(s) for s in (0, 0.3, 7, 40, 61, 700, 1000, 5000)] == [
        1.0,
        0.5,
        10.0,
        60.0,
        120.0,
        900.0,
        1800.0,
        7200.0,
    ]


def test_dead_and_poison_are_never_green_whatever_their_place():
    names = ["expired", "duplicate", "poison", "dead", "done", *(f"r{i}" for i in range(9))]
    colors = colors_for(names)
    assert colors["done"] == GREEN
    assert colors["poison"] == colors["dead"] == VERMILLION
    assert [name for name, color in colors.items() if color == GREEN] == ["done"]
    chart = stacked_bars([("10:00", {"poison": 2})], ["unknown-sku", "poison"], title="Drops")
    assert [s.color for s in chart.series] == [PALETTE[0], VERMILLION]


def test_a_series_counted_in_events_says_so_in_its_legend_and_bars():
    chart = stacked_bars(
        [("10:00", {"done": 1, "failed": 3})],
        ["done", "failed"],
        title="Settled",
        counted=lambda name, n: f"{n} {'events' if name == 'failed' else 'jobs'}",
    )
    assert [(s.name, s.shown) for s in chart.series] == [("done", "1 jobs"), ("failed", "3 events")]
    assert chart.bars[1].title == "10:00: 3 events failed"
