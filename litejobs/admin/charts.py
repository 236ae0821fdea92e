"""Small charts the admin draws on the server, as inline SVG: no script, no chart library,
readable by a screen reader (a title, a description and a title per bar) and printable.

``stacked_bars`` lays out one column per period with a bar per series stacked in it; the
template ``admin/litejobs/chart.html`` draws the answer. ``lines`` lays out a value per
period and series (e.g. latency percentiles) as lines; ``admin/litejobs/line_chart.html``
draws it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Bar", "Chart", "Line", "LineChart", "Point", "Series", "Tick", "lines", "stacked_bars"]

#: Colours told apart by people with the common colour-vision deficiencies (Okabe and Ito).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
#: The drawing's size, in SVG user units (it scales to the page's width).
WIDTH, HEIGHT = 720.0, 200.0
#: Room for the y axis's labels (left) and the x axis's (bottom).
LEFT, TOP, RIGHT, BOTTOM = 44.0, 10.0, 8.0, 24.0


@dataclass(frozen=True)
class Bar:
    """One series' part of one column."""

    x: float
    y: float
    width: float
    height: float
    color: str
    series: str
    title: str


@dataclass(frozen=True)
class Series:
    """A series in the legend: its colour and its total over the chart."""

    name: str
    color: str
    total: int


@dataclass(frozen=True)
class Tick:
    """A label on an axis, at ``position`` along it."""

    position: float
    label: str


@dataclass(frozen=True, kw_only=True)
class Frame:
    """The drawing's geometry, shared by every kind of chart."""

    width: float = WIDTH
    height: float = HEIGHT
    left: float = LEFT
    top: float = TOP
    right: float = WIDTH - RIGHT
    bottom: float = HEIGHT - BOTTOM

    @property
    def label_x(self) -> float:
        """Where the y axis's labels end (right-aligned)."""
        return self.left - 6

    @property
    def label_y(self) -> float:
        """The x axis's labels' baseline."""
        return self.height - 6


@dataclass(frozen=True)
class Chart(Frame):
    """A laid-out stacked bar chart."""

    title: str
    description: str
    bars: list[Bar]
    series: list[Series]
    x_ticks: list[Tick]
    y_ticks: list[Tick]

    @property
    def total(self) -> int:
        """Every series' total together."""
        return sum(series.total for series in self.series)


def ceiling(value: int) -> int:
    """The y axis's top: the smallest of 1, 2 or 5 times a power of ten that is ``value`` or
    more (1 at least)."""
    scale = 1
    while True:
        for step in (1, 2, 5):
            if step * scale >= value:
                return step * scale
        scale *= 10


def stacked_bars(
    columns: Sequence[tuple[str, Mapping[str, int]]],
    series: Sequence[str],
    *,
    title: str,
    short_labels: Sequence[str] | None = None,
    label_every: int = 3,
) -> Chart:
    """Lay out ``columns`` (a label and the count of each of ``series``) as stacked bars,
    series in the order given from the bottom up; every ``label_every``-th column is
    labelled on the x axis, with its ``short_labels`` entry when given (the bars' titles
    keep the full label)."""
    shorts = list(short_labels) if short_labels is not None else [label for label, _ in columns]
    colors = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(series)}
    top = ceiling(max((sum(counts.values()) for _, counts in columns), default=0))
    plot_height = HEIGHT - BOTTOM - TOP
    slot = (WIDTH - RIGHT - LEFT) / max(len(columns), 1)
    bars, x_ticks = [], []
    for index, (label, counts) in enumerate(columns):
        x = LEFT + index * slot
        base = HEIGHT - BOTTOM
        for name in series:
            count = counts.get(name, 0)
            if not count:
                continue
            height = plot_height * count / top
            base -= height
            bars.append(
                Bar(
                    round(x + slot * 0.1, 1),
                    round(base, 1),
                    round(slot * 0.8, 1),
                    round(height, 1),
                    colors[name],
                    name,
                    f"{label}: {count} {name}",
                )
            )
        if index % label_every == 0:
            x_ticks.append(Tick(round(x + slot / 2, 1), shorts[index]))
    y_ticks = [
        Tick(round(HEIGHT - BOTTOM - plot_height * f, 1), _count(top * f)) for f in (0, 0.5, 1)
    ]
    totals = [
        Series(name, colors[name], sum(c.get(name, 0) for _, c in columns)) for name in series
    ]
    return Chart(
        title=title,
        description=_describe(columns, totals),
        bars=bars,
        series=totals,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
    )


def _count(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def _describe(columns: Sequence[tuple[str, Mapping[str, int]]], totals: list[Series]) -> str:
    if not columns:
        return "No periods to show."
    span = f"From {columns[0][0]} to {columns[-1][0]}"
    if not any(series.total for series in totals):
        return f"{span}: none."
    parts = ", ".join(f"{series.name} {series.total}" for series in totals if series.total)
    return f"{span}: {parts}."


@dataclass(frozen=True)
class Point:
    """One value of a line, with its title (read on hover and by screen readers)."""

    x: float
    y: float
    title: str


@dataclass(frozen=True)
class Line:
    """One series as lines through its points; a period without a value breaks the line."""

    series: str
    color: str
    segments: list[str]  # SVG polyline ``points``, one per unbroken run of values
    points: list[Point]
    latest: str  # the last value, formatted ("" when there is none)


@dataclass(frozen=True)
class LineChart(Frame):
    """A laid-out line chart."""

    title: str
    description: str
    lines: list[Line]
    x_ticks: list[Tick]
    y_ticks: list[Tick]


def nice_top(value: float) -> float:
    """The smallest of 1, 2 or 5 times a power of ten (fractions too) that is ``value`` or
    more; 1 for nothing to show."""
    if value <= 0:
        return 1.0
    scale = 10.0 ** math.floor(math.log10(value))
    return next(step * scale for step in (1, 2, 5, 10) if step * scale >= value)


def lines(
    columns: Sequence[tuple[str, Mapping[str, float | None]]],
    series: Sequence[str],
    *,
    title: str,
    fmt: Callable[[float], str],
    short_labels: Sequence[str] | None = None,
    label_every: int = 3,
) -> LineChart:
    """Lay out ``columns`` (a label and each series' value, None for none) as one line per
    series; values are labelled with ``fmt``, the x axis as ``stacked_bars`` labels it."""
    shorts = list(short_labels) if short_labels is not None else [label for label, _ in columns]
    values = [v for _, found in columns for v in found.values() if v is not None]
    top = nice_top(max(values, default=0.0))
    plot_height = HEIGHT - BOTTOM - TOP
    slot = (WIDTH - RIGHT - LEFT) / max(len(columns), 1)
    drawn = [
        _line(columns, name, PALETTE[i % len(PALETTE)], top, slot, fmt)
        for i, name in enumerate(series)
    ]
    x_ticks = [
        Tick(round(LEFT + index * slot + slot / 2, 1), shorts[index])
        for index in range(0, len(columns), max(label_every, 1))
    ]
    y_ticks = [Tick(round(HEIGHT - BOTTOM - plot_height * f, 1), fmt(top * f)) for f in (0, 0.5, 1)]
    if not values:
        description = "No jobs started in these periods."
    else:
        latest = ", ".join(f"{line.series} {line.latest}" for line in drawn if line.latest)
        description = f"From {columns[0][0]} to {columns[-1][0]}; latest: {latest}."
    return LineChart(
        title=title, description=description, lines=drawn, x_ticks=x_ticks, y_ticks=y_ticks
    )


def _line(
    columns: Sequence[tuple[str, Mapping[str, float | None]]],
    name: str,
    color: str,
    top: float,
    slot: float,
    fmt: Callable[[float], str],
) -> Line:
    plot_height = HEIGHT - BOTTOM - TOP
    segments: list[list[str]] = [[]]
    points, latest = [], ""
    for index, (label, found) in enumerate(columns):
        value = found.get(name)
        if value is None:
            segments.append([])
            continue
        x = round(LEFT + index * slot + slot / 2, 1)
        y = round(HEIGHT - BOTTOM - plot_height * value / top, 1)
        segments[-1].append(f"{x},{y}")
        latest = fmt(value)
        points.append(Point(x, y, f"{label}: {name} {latest}"))
    return Line(name, color, [" ".join(s) for s in segments if s], points, latest)
