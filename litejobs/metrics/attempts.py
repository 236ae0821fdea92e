"""Attempt counts and durations as Prometheus families, from tallies that outlive processes.

A worker process's own counters die with it, and several workers would each answer a part:
so the families here are built from tallies kept in the database — rows of ``(job name,
outcome, count, duration sum, bucket counts)`` summed over the workers that wrote them — and
read at scrape time like every other litejobs family. ``families(tallies, bounds)`` is the
whole reader: point it at any source of ``Tally`` rows (``LitejobsCollector(tallies=...)``).

- ``litejobs_job_attempts_total{job,outcome}``: attempts that ended, per job and outcome;
- ``litejobs_job_duration_seconds{job,outcome}``: a histogram of how long they ran.

Labels stay bounded: ``job`` is a declared job's name, any other name (a job since removed, a
typo enqueued by hand) is folded into ``other``; ``outcome`` is the tally's own closed set.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric

from ..jobs import minutes
from ..jobs.metrics import OTHER, declared_names

__all__ = ["OTHER", "Tally", "counted_tallies", "declared_names", "families", "fold"]

#: The default upper bounds (seconds) of the duration histogram's buckets.
BOUNDS: tuple[float, ...] = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)


@dataclass(frozen=True)
class Tally:
    """Attempts of one job name that ended with one outcome (over any span: a minute, a
    shard, since the start). ``buckets[i]`` counts those whose duration was over
    ``bounds[i - 1]`` and at most ``bounds[i]``; the ones over the last bound are the rest of
    ``count``."""

    name: str
    outcome: str
    count: int
    duration_sum: float
    buckets: Sequence[int] = field(default_factory=tuple)


@dataclass
class _Totals:
    count: int = 0
    duration_sum: float = 0.0
    buckets: list[int] = field(default_factory=list)

    def add(self, tally: Tally, width: int) -> None:
        self.count += tally.count
        self.duration_sum += tally.duration_sum
        if len(self.buckets) < width:
            self.buckets.extend([0] * (width - len(self.buckets)))
        for index, value in enumerate(tally.buckets[:width]):
            self.buckets[index] += value


def counted_tallies() -> list[Tally]:
    """The attempts the settling statements counted (the per-minute job counters, with the
    totals carried past their retention): the collector's source of tallies by default."""
    return [
        Tally(total.name, total.outcome, total.count, total.duration_sum, total.buckets)
        for total in minutes.started_totals()
    ]


def fold(
    tallies: Iterable[Tally], declared: Collection[str], width: int
) -> dict[tuple[str, str], _Totals]:
    """The tallies summed per ``(job label, outcome)``, undeclared names as ``other``."""
    totals: dict[tuple[str, str], _Totals] = {}
    for tally in tallies:
        label = tally.name if tally.name in declared else OTHER
        totals.setdefault((label, tally.outcome), _Totals()).add(tally, width)
    return totals


def families(
    tallies: Iterable[Tally], declared: Collection[str], bounds: Sequence[float] = BOUNDS
) -> Iterator[Metric]:
    """The attempts counter and the duration histogram of ``tallies`` (see the module)."""
    attempts = CounterMetricFamily(
        "litejobs_job_attempts",
        "Attempts that ended, per job and outcome (every worker's).",
        labels=["job", "outcome"],
    )
    durations = HistogramMetricFamily(
        "litejobs_job_duration_seconds",
        "How long attempts ran, per job and outcome (every worker's).",
        labels=["job", "outcome"],
    )
    for labels, totals in sorted(fold(tallies, declared, len(bounds)).items()):
        attempts.add_metric(list(labels), totals.count)
        durations.add_metric(list(labels), _cumulative(totals, bounds), totals.duration_sum)
    yield attempts
    yield durations


def _cumulative(totals: _Totals, bounds: Sequence[float]) -> list[tuple[str, float]]:
    """Prometheus buckets (cumulative, ``+Inf`` last) of per-bucket counts."""
    running = 0
    buckets = []
    for bound, value in zip(bounds, totals.buckets, strict=False):
        running += value
        buckets.append((_bound_label(bound), float(running)))
    buckets.append(("+Inf", float(totals.count)))
    return buckets


def _bound_label(bound: float) -> str:
    """``le`` as prometheus-client writes it (``1.0``, ``0.05``)."""
    return repr(float(bound))
