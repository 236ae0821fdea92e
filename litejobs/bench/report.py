"""The bench's figures: rounds summarised (median, min, max), rows, the table and the JSON."""

from __future__ import annotations

import math
import os
import platform
import statistics
from collections.abc import Hashable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from ..sql.cursors import Cursor

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
    empty table and W6's memory row where it is the same workers earlier in the run. ``better``
    says which way the ratio should go. ``cpu`` and ``floor_cpu`` are each side's client
    process CPU in µs per job (W7: per step, W8: per row), where the workload measures it.
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
    durability: str = "on"
    cpu: Stats | None = None
    floor_cpu: Stats | None = None

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
    #: Per durability variant, the ``synchronous_commit`` each kind of connection showed:
    #: ``{"off": {"bench": ["off"], "floor": ["off"], "workers": ["off"]}}``.
    durability: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    #: W6's memory per durability variant: per round, each worker's peak and current RSS in
    #: MB at the checkpoint and at the end, and their growth in percent.
    memory: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rows": [row.as_dict() for row in self.rows]}

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
            "CPU: client process CPU (user + system), median µs per job (W7: per step, W8, W11, "
            "W11F and W12: per row) of the bench process (W1, W2, W8, W11F, W11's and W12's "
            "floors) or of the worker and floor processes (W3, W6, W7, W9, W11, W12)",
        ]
        for variant in params["durability"]:
            lines.extend(["", self._durability_title(variant), ""])
            lines.extend(_table([row for row in self.rows if row.durability == variant]))
            lines.extend(_memory_lines(self.memory.get(variant, [])))
        lines.append("")
        lines.extend(f"{workload} floor: {text}" for workload, text in self.floors.items())
        if env.get("debug"):
            lines.append("Django DEBUG is on: every query is recorded, enqueue figures suffer.")
        return "\n".join(lines) + "\n"

    def _durability_title(self, variant: str) -> str:
        seen = self.durability.get(variant, {})
        shown = "; ".join(f"{kind} {'/'.join(values)}" for kind, values in sorted(seen.items()))
        return (
            f"== durability {variant}: synchronous_commit={variant} set on every connection of "
            f"litejobs and of the floor (SHOW synchronous_commit answered: {shown or 'nothing'}) =="
        )


def _table(rows: list[Row]) -> list[str]:
    header = [
        "id",
        "workload",
        "figure",
        "litejobs",
        "baseline",
        "ratio",
        "better",
        "target",
        "CPU µs",
        "floor CPU µs",
    ]
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
            "" if row.cpu is None else number(row.cpu.median),
            "" if row.floor_cpu is None else number(row.floor_cpu.median),
        ]
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in [header, *cells]
    ]


def _memory_lines(rounds: list[dict[str, Any]]) -> list[str]:
    lines = []
    for number_, memory in enumerate(rounds, 1):
        workers = "; ".join(
            f"peak {_change(worker, 'peak')}, resident {_change(worker, 'rss')}"
            for worker in memory["workers"]
        )
        lines.append(
            f"W6 round {number_}, each worker at {memory['checkpoint']:,} -> "
            f"{memory['jobs']:,} jobs: {workers}"
        )
    return lines


def _change(worker: dict[str, float], name: str) -> str:
    return (
        f"{worker[f'{name}_at_checkpoint_mb']:.1f} -> {worker[f'{name}_at_end_mb']:.1f} MB "
        f"({worker[f'{name}_growth_percent']:+.1f} %)"
    )


def environment(cursor: Cursor, database: str) -> dict[str, Any]:
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
