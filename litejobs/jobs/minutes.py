"""Reads of the per-minute job counters (``litejobs.models.minutes``): how many jobs settled
per period and how, and their due → start latency percentiles, for the admin's dashboard. The
job table is never read: the counters are written by the statements that settle jobs, so a
chart stays cheap whatever the number of job rows (and shows jobs already purged).

The counters of a minute past the last hour are folded into their hour's (``fold_minutes``,
the built-in ``litejobs.minutes_rollup`` schedule), so the day chart's cost no longer grows
with the worker sessions and the minutes of each hour; after two days, into carried totals
(``purge_minutes``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connections

from ..conf import settings
from ..models import BUCKET_BOUNDS, MinuteOutcome
from ..sql.cursors import fetch_all, run_query

__all__ = [
    "KEPT",
    "UNFOLDED",
    "Period",
    "Started",
    "fold_minutes",
    "longest",
    "periods",
    "purge_minutes",
    "quantile",
    "started_totals",
]

logger = logging.getLogger(__name__)

#: How long the counters of a minute are kept (the dashboard shows the last day).
KEPT = timedelta(days=2)
#: How long a minute's counters stay apart from its hour's: the dashboard's last hour, per
#: minute, plus a margin for a clock ahead of the dashboard's (``fold_minutes``).
UNFOLDED = timedelta(minutes=75)


@dataclass
class Period:
    """One column of a chart: jobs settled per outcome, and the latency histogram."""

    start: datetime
    counts: dict[str, int] = field(default_factory=dict)
    latency: list[int] = field(default_factory=lambda: [0] * (len(BUCKET_BOUNDS) + 1))
    #: The latencies' sum, in seconds.
    latency_sum: float = 0.0

    @property
    def failures(self) -> int:
        """Attempts that did not succeed (retried, dead, lapsed)."""
        return sum(
            self.counts.get(outcome, 0)
            for outcome in (MinuteOutcome.FAILED, MinuteOutcome.DEAD, MinuteOutcome.LAPSED)
        )

    def latency_quantile(self, q: float) -> float | None:
        """The estimated ``q`` quantile of due → start latency, in seconds (None: no jobs),
        never above the longest latency the period can hold (``longest``)."""
        estimate = quantile(q, self.latency)
        return None if estimate is None else min(estimate, longest(self.latency, self.latency_sum))


def quantile(q: float, buckets: list[int]) -> float | None:
    """Estimate the ``q`` quantile from bucket counts of ``BUCKET_BOUNDS``, as Prometheus'
    ``histogram_quantile`` does: linear within the bucket the rank falls in; past the last
    bound, the last bound (the histogram knows nothing beyond it)."""
    total = sum(buckets)
    if not total:
        return None
    rank = q * total
    below = 0
    for index, count in enumerate(buckets):
        if count and below + count >= rank:
            if index >= len(BUCKET_BOUNDS):
                return float(BUCKET_BOUNDS[-1])
            lower = float(BUCKET_BOUNDS[index - 1]) if index else 0.0
            upper = float(BUCKET_BOUNDS[index])
            return lower + (upper - lower) * (rank - below) / count
        below += count
    return float(BUCKET_BOUNDS[-1])


def longest(buckets: list[int], total: float) -> float:
    """The most any one value counted in ``buckets`` can be, given the values' sum ``total``:
    each of the others is at least its bucket's lower bound, so the largest is at most the
    sum less theirs (exact for a single value; at most the top bucket's upper bound). A
    quantile interpolated within a bucket can land above every value observed (one job that
    waited 61 s reads 4m 48s as its p95 in the 60 s - 5 min bucket); cut to this, it cannot
    be above the longest wait there was."""
    lowers = [0.0, *(float(bound) for bound in BUCKET_BOUNDS)]
    top = max((index for index, count in enumerate(buckets) if count), default=None)
    if top is None:
        return 0.0
    others = sum(count * lowers[index] for index, count in enumerate(buckets)) - lowers[top]
    cap = float(BUCKET_BOUNDS[top]) if top < len(BUCKET_BOUNDS) else math.inf
    return min(max(total - others, lowers[top]), cap)


def periods(*, start: datetime, end: datetime, step: timedelta) -> list[Period]:
    """The periods ``step`` wide from ``start`` to ``end``, with what settled in each: two
    one query over the counters of those minutes."""
    found: dict[datetime, Period] = {}
    at = start
    while at < end:
        found[at] = Period(at)
        at += step
    params: dict[str, Any] = {"start": start, "end": end, "step": step}
    with connections[settings.DATABASE].cursor() as cursor:
        run_query(cursor, "minute_counts", params)
        rows = fetch_all(cursor)
    for row in rows:
        period = found[row["period"]]
        period.counts[row["outcome"]] = int(row["count"])
        for index in range(len(period.latency)):
            period.latency[index] += int(row[f"l{index + 1}"] or 0)
        period.latency_sum += float(row["latency_sum"] or 0.0)
    return list(found.values())


def fold_minutes(now: datetime) -> int:
    """Fold the counters of minutes older than ``UNFOLDED`` into one row per hour, queue, name
    and outcome, so the day chart sums one row an hour whatever the sessions and minutes; the
    last hour's chart never sees a folded row. Answers how many rows went."""
    folded = _fold(before=now - UNFOLDED, carry=False)
    logger.info("job counters folded per hour rows=%s", folded)
    return folded


def purge_minutes(now: datetime) -> int:
    """Fold the counters of minutes older than ``KEPT`` into each queue, name and outcome's
    carried totals (so totals since the start never go down); answers how many rows went."""
    deleted = _fold(before=now - KEPT, carry=True)
    logger.info("job counters purged rows=%s", deleted)
    return deleted


def _fold(*, before: datetime, carry: bool) -> int:
    with connections[settings.DATABASE].cursor() as cursor:
        run_query(cursor, "fold_minutes", {"before": before, "carry": carry})
        return int(cursor.fetchone()[0])


@dataclass(frozen=True)
class Started:
    """The attempts of one job name that started and ended with one outcome, since the start:
    how many, their summed duration, and their duration histogram over ``BUCKET_BOUNDS``
    (``buckets[i]`` over bound *i* - 1 up to bound *i*; the last, over the last bound)."""

    name: str
    outcome: str
    count: int
    duration_sum: float
    buckets: tuple[int, ...]


def started_totals() -> list[Started]:
    """Every job name's started attempts per outcome since the start (one statement)."""
    with connections[settings.DATABASE].cursor() as cursor:
        run_query(cursor, "minute_tallies")
        rows = fetch_all(cursor)
    return [
        Started(
            name=row["name"],
            outcome=row["outcome"],
            count=int(row["timed"]),
            duration_sum=float(row["duration_sum"] or 0.0),
            buckets=tuple(int(row[f"d{i}"] or 0) for i in range(1, len(BUCKET_BOUNDS) + 2)),
        )
        for row in rows
    ]
