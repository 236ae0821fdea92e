"""Small charts the admin draws on the server, as inline SVG: no script, no chart library,
readable by a screen reader (a title, a description and a title per bar) and printable.

``stacked_bars`` lays out one column per period with a bar per series stacked in it; the
template ``admin/litejobs/chart.html`` draws the answer. ``lines`` lays out a value per
period and series (e.g. latency percentiles) as lines; ``admin/litejobs/line_chart.html``
draws it.

A chart is drawn at least as wide as its drawing (``litejobs/charts.css``: one user unit is
one CSS pixel or more), so its ``FONT``-unit labels are never smaller than ``FONT`` pixels on
screen; the y axis gets the room its longest label needs, and no label reaches past the
drawing's edge.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "Bar",
    "Chart",
    "Line",
    "LineChart",
    "Point",
    "Series",
    "Tick",
    "duration_top",
    "lines",
    "stacked_bars",
]

#: Colours told apart by people with the common colour-vision deficiencies (Okabe and Ito),
#: given to series in turn. Green and vermillion are not among them: they are ``TONES``.
PALETTE = ("#0072B2", "#E69F00", "#CC79A7", "#56B4E9", "#F0E442", "#999999")
GREEN, VERMILLION = "#009E73", "#D55E00"
#: Series whose colour says what they are, on every chart: green is for what succeeded only,
#: vermillion for what is lost (a dead job, a poison record).
TONES = {"done": GREEN, "dead": VERMILLION, "poison": VERMILLION}
#: The drawing's size, in SVG user units (one CSS pixel or more on screen).
WIDTH, HEIGHT = 340.0, 160.0
#: The labels' size, in user units.
FONT = 11.0
#: Room above the plot, right of it (half an x label) and below it (the x axis's labels).
TOP, RIGHT, BOTTOM = 10.0, 18.0, 22.0
#: Room between the y axis's labels and the plot.
GAP = 6.0
#: The duration axis's tops, in seconds: 1, 2 or 5 of a unit people count in.
DURATION_TOPS = (
    *(step * 10.0**power for power in range(-2, 1) for step in (1, 2, 5)),
    *(10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0),
    *(7200.0, 21600.0, 43200.0, 86400.0),
)


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
    """A series in the legend: its colour, its total over the chart and that total in words
    (``12 jobs``, ``3 events``)."""

    name: str
    color: str
    total: int
    shown: str


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
    font: float = FONT
    left: float
    top: float = TOP
    right: float = WIDTH - RIGHT
    bottom: float = HEIGHT - BOTTOM

    @property
    def widest(self) -> int:
        """How wide it is drawn at most, in CSS pixels (its labels then stay modest); never
        narrower than ``width``."""
        return round(self.width * 1.45)

    @property
    def label_x(self) -> float:
        """Where the y axis's labels end (right-aligned)."""
        return self.left - GAP

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


def text_width(text: str, size: float = FONT) -> float:
    """About how wide ``text`` is drawn at ``size``, erring wide: two thirds of an em a
    character, a whole one for the wide letters (``m``, ``w``)."""
    return sum(0.95 if char in "mwMW" else 0.65 for char in text) * size


def _left(y_ticks: Sequence[Tick]) -> float:
    """The plot's left edge: room for the y axis's longest label and the gap."""
    return round(max((text_width(tick.label) for tick in y_ticks), default=0.0) + GAP + 2, 1)


def _x_ticks(shorts: Sequence[str], left: float, slot: float, label_every: int) -> list[Tick]:
    """Every ``label_every``-th column's label under its middle, kept inside the drawing."""
    ticks = []
    for index in range(0, len(shorts), max(label_every, 1)):
        half = text_width(shorts[index]) / 2
        middle = left + index * slot + slot / 2
        ticks.append(Tick(round(min(max(middle, half), WIDTH - half), 1), shorts[index]))
    return ticks


def _y_ticks(top: float, label: Callable[[float], str]) -> list[Tick]:
    plot_height = HEIGHT - BOTTOM - TOP
    return [Tick(round(HEIGHT - BOTTOM - plot_height * f, 1), label(top * f)) for f in (0, 0.5, 1)]


def ceiling(value: int) -> int:
    """The y axis's top: the smallest of 1, 2 or 5 times a power of ten that is ``value`` or
    more (1 at least)."""
    scale = 1
    while True:
        for step in (1, 2, 5):
            if step * scale >= value:
                return step * scale
        scale *= 10


def colors_for(series: Sequence[str]) -> dict[str, str]:
    """Each series' colour: its tone when it has one, else the palette's next."""
    free = iter(PALETTE * (len(series) // len(PALETTE) + 1))
    return {name: TONES.get(name) or next(free) for name in series}


def stacked_bars(
    columns: Sequence[tuple[str, Mapping[str, int]]],
    series: Sequence[str],
    *,
    title: str,
    short_labels: Sequence[str] | None = None,
    label_every: int = 3,
    colors: Mapping[str, str] | None = None,
    counted: Callable[[str, int], str] | None = None,
) -> Chart:
    """Lay out ``columns`` (a label and the count of each of ``series``) as stacked bars,
    series in the order given from the bottom up; every ``label_every``-th column is
    labelled on the x axis, with its ``short_labels`` entry when given (the bars' titles
    keep the full label). ``colors`` overrides ``colors_for``; ``counted(series, n)`` words a
    count (``3 events``: a series may count one job more than once), plain by default."""
    shorts = list(short_labels) if short_labels is not None else [label for label, _ in columns]
    colors = {**colors_for(series), **(colors or {})}
    words = counted or (lambda name, count: str(count))
    top = ceiling(max((sum(counts.values()) for _, counts in columns), default=0))
    y_ticks = _y_ticks(top, _count)
    left = _left(y_ticks)
    plot_height = HEIGHT - BOTTOM - TOP
    slot = (WIDTH - RIGHT - left) / max(len(columns), 1)
    bars = []
    for index, (label, counts) in enumerate(columns):
        x = left + index * slot
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
                    f"{label}: {words(name, count)} {name}",
                )
            )
    totals = []
    for name in series:
        total = sum(counts.get(name, 0) for _, counts in columns)
        totals.append(Series(name, colors[name], total, words(name, total)))
    return Chart(
        left=left,
        title=title,
        description=_describe(columns, totals),
        bars=bars,
        series=totals,
        x_ticks=_x_ticks(shorts, left, slot, label_every),
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
    parts = ", ".join(f"{series.name} {series.shown}" for series in totals if series.total)
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


def duration_top(seconds: float) -> float:
    """A duration axis's top: the first of ``DURATION_TOPS`` that is ``seconds`` or more (15
    minutes, not 1000 seconds), whole days past them; 1 second for nothing to show."""
    if seconds <= 0:
        return 1.0
    return next((top for top in DURATION_TOPS if top >= seconds), None) or (
        math.ceil(seconds / 86400) * 86400.0
    )


def lines(
    columns: Sequence[tuple[str, Mapping[str, float | None]]],
    series: Sequence[str],
    *,
    title: str,
    fmt: Callable[[float], str],
    short_labels: Sequence[str] | None = None,
    label_every: int = 3,
    scale: Callable[[float], float] = nice_top,
) -> LineChart:
    """Lay out ``columns`` (a label and each series' value, None for none) as one line per
    series; values are labelled with ``fmt``, the y axis tops at ``scale(largest value)``,
    the x axis is labelled as ``stacked_bars`` labels it."""
    shorts = list(short_labels) if short_labels is not None else [label for label, _ in columns]
    values = [v for _, found in columns for v in found.values() if v is not None]
    top = scale(max(values, default=0.0))
    y_ticks = _y_ticks(top, fmt)
    left = _left(y_ticks)
    slot = (WIDTH - RIGHT - left) / max(len(columns), 1)
    colors = colors_for(series)
    drawn = [_line(columns, name, colors[name], (top, left, slot), fmt) for name in series]
    if not values:
        description = "No jobs started in these periods."
    else:
        latest = ", ".join(f"{line.series} {line.latest}" for line in drawn if line.latest)
        description = f"From {columns[0][0]} to {columns[-1][0]}; latest: {latest}."
    return LineChart(
        left=left,
        title=title,
        description=description,
        lines=drawn,
        x_ticks=_x_ticks(shorts, left, slot, label_every),
        y_ticks=y_ticks,
    )


def _line(
    columns: Sequence[tuple[str, Mapping[str, float | None]]],
    name: str,
    color: str,
    geometry: tuple[float, float, float],
    fmt: Callable[[float], str],
) -> Line:
    top, left, slot = geometry
    plot_height = HEIGHT - BOTTOM - TOP
    segments: list[list[str]] = [[]]
    points, latest = [], ""
    for index, (label, found) in enumerate(columns):
        value = found.get(name)
        if value is None:
            segments.append([])
            continue
        x = round(left + index * slot + slot / 2, 1)
        y = round(HEIGHT - BOTTOM - plot_height * value / top, 1)
        segments[-1].append(f"{x},{y}")
        latest = fmt(value)
        points.append(Point(x, y, f"{label}: {name} {latest}"))
    return Line(name, color, [" ".join(s) for s in segments if s], points, latest)
