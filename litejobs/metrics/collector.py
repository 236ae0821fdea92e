"""Prometheus metrics, read from the database at scrape time (nothing kept in memory).

``LitejobsCollector`` is a prometheus-client custom collector: each scrape runs a few small
queries and answers gauges, so any number of web processes serve the same numbers and a
restarted one loses nothing. Mount ``litejobs.views.metrics`` (the demo serves it at
``/metrics``), or register the collector in your own registry.

Each feature reads its own families (its ``Feature.metrics``, see
``litejobs.core.features``; every family is listed in docs/how-to/metrics.md), served here in
the features' order. With a source of tallies (``LitejobsCollector(tallies=...)``, see
``attempts``) come the attempt counter ``litejobs_job_attempts_total{job,outcome}`` and the
histogram ``litejobs_job_duration_seconds{job,outcome}``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ..core import clock, features
from ..core.features import Family
from ..core.histogram import BUCKET_BOUNDS
from . import attempts


class LitejobsCollector(Collector):
    """Answers litejobs' gauges from the database on every scrape."""

    def __init__(
        self,
        tallies: Callable[[], Iterable[attempts.Tally]] | None = attempts.counted_tallies,
        bounds: Sequence[float] = BUCKET_BOUNDS,
    ) -> None:
        #: Where the attempt counter and duration histogram come from (none: not served).
        self.tallies = tallies
        self.bounds = bounds

    def collect(self) -> Iterator[Metric]:
        """Every family, freshly read."""
        now = clock.now()
        for feature in features.installed():
            if feature.metrics is not None:
                yield from map(exposed, feature.metrics(now))
        if self.tallies is not None:
            yield from attempts.families(self.tallies(), attempts.declared_names(), self.bounds)


def exposed(family: Family) -> Metric:
    """A feature's family as prometheus-client's."""
    kind = CounterMetricFamily if family.counter else GaugeMetricFamily
    metric = kind(family.name, family.help, labels=list(family.labels))
    for labels, value in family.samples:
        metric.add_metric(list(labels), value)
    return metric


def registry(
    tallies: Callable[[], Iterable[attempts.Tally]] | None = attempts.counted_tallies,
) -> CollectorRegistry:
    """A registry holding only litejobs' collector (the view serves it), with ``tallies`` as
    the source of its attempt counter and duration histogram."""
    own = CollectorRegistry(auto_describe=False)
    own.register(LitejobsCollector(tallies=tallies))
    return own
