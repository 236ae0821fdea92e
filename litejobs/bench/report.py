"""The bench's figures: rounds summarised (median, min, max), rows, the table and the JSON."""

from __future__ import annotations

import math
import os
import platform
import statistics
from collections.abc import Hashable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

HIGHER = "higher"
LOWER = "lower"
#: What a row compares litejobs with.
FLOOR = "plain-SQL floor"
EMPTY_TABLE = "empty table"


@dataclass(frozen=True)
class Stats:
    """One figure over the rounds: the median, and the spread from min to max."""

    median: float
    min: float
    max: float

    @classmethod
    def of(cls, values: list[float]) -> Stats:
        return cls(statistics.median(values), min(values), max(values))

    def text(self) -> str:
        return f"{number(self.median)} [{number(self.min)}-{number(self.max)}]"


#: The key of a round's figures: a figure's name, or (side, name) for a comparison.
K = TypeVar("K", bound=Hashable)


def summarise(rounds: list[dict[K, float]]) -> dict[K, Stats]:
    """``{figure: Stats}`` from one ``{figure: value}`` per round."""
    return {figure: Stats.of([values[figure] for values in rounds]) for figure in rounds[0]}


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile (``fraction`` 0.95 is p95)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def number(value: float) -> str:
    """A figure with as many digits as it deserves."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


@dataclass(frozen=True)
class Row:
    """One figure of one workload: litejobs beside its baseline, and their ratio.

    The baseline is the plain-SQL floor, except for W9 where it is the same workload on an
    empty table. ``better`` says which way the ratio should go.
    """

    workload: str
    variant: str
    figure: str
    unit: str
    better: str
    litejobs: Stats
    floor: Stats
    target: str = ""
    baseline: str = FLOOR

    @property
    def ratio(self) -> float | None:
        """litejobs ÷ baseline, on the medians (None when the baseline is zero)."""
        return self.litejobs.median / self.floor.median if self.floor.median else None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


@dataclass
class Report:
    """Everything one ``bench`` run printed."""

    environment: dict[str, Any]
    settings: dict[str, Any]
    parameters: dict[str, Any]
    floors: dict[str, str] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "environment": self.environment,
            "settings": self.settings,
            "parameters": self.parameters,
            "floors": self.floors,
            "rows": [row.as_dict() for row in self.rows],
        }

    def render(self) -> str:
        env, params = self.environment, self.parameters
        lines = [
            f"PostgreSQL {env['postgresql']} (fsync={env['fsync']}, "
            f"synchronous_commit={env['synchronous_commit']}); Python {env['python']}; "
            f"Django {env['django']}; psycopg {env['psycopg']}; {env['cpus']} CPUs "
            f"({env['platform']})",
            f"scratch database {env['database']}; {params['rounds']} round(s); figures are "
            "median [min-max]; ratio = litejobs / baseline (medians); 'better' is the direction "
            "a better ratio goes (higher for rates, lower for times and statement counts)",
            f"W5 statement count: {params['w5_method']}",
            "litejobs settings: "
            + ", ".join(f"{name}={value}" for name, value in sorted(self.settings.items())),
            "",
        ]
        header = ["id", "workload", "figure", "litejobs", "baseline", "ratio", "better", "target"]
        cells = [
            [
                row.workload,
                row.variant,
                f"{row.figure} ({row.unit})",
                row.litejobs.text(),
                row.floor.text() + ("" if row.baseline == FLOOR else f" ({row.baseline})"),
                "n/a" if row.ratio is None else f"{row.ratio:.2f}",
                row.better,
                row.target,
            ]
            for row in self.rows
        ]
        widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]
        for line in [header, *cells]:
            lines.append("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
        lines.append("")
        lines.extend(f"{workload} floor: {text}" for workload, text in self.floors.items())
        if env.get("debug"):
            lines.append("Django DEBUG is on: every query is recorded, enqueue figures suffer.")
        return "\n".join(lines) + "\n"


def environment(cursor: Any, database: str) -> dict[str, Any]:
    """The server's version and durability, and this machine's, printed beside the figures."""
    import django
    import psycopg
    from django.conf import settings

    shown = {}
    for name in ("server_version", "fsync", "synchronous_commit"):
        cursor.execute(f"SHOW {name}")
        shown[name] = cursor.fetchone()[0]
    return {
        "postgresql": shown["server_version"],
        "fsync": shown["fsync"],
        "synchronous_commit": shown["synchronous_commit"],
        "python": platform.python_version(),
        "django": django.get_version(),
        "psycopg": psycopg.__version__,
        "cpus": os.cpu_count(),
        "platform": platform.platform(terse=True),
        "database": database,
        "debug": bool(settings.DEBUG),
    }
