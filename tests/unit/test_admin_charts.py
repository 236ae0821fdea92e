"""The admin's server-drawn stacked bar chart: its scale, its stacking and its words."""

from __future__ import annotations

import pytest

from litejobs.admin.charts import HEIGHT, PALETTE, ceiling, stacked_bars


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
    assert first_a.y + first_a.height == HEIGHT - 24  # on the x axis
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
