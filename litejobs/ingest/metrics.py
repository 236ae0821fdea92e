"""Ingest pipelines' metric families (``Feature.metrics``; the metrics add-on serves them):

``litejobs_ingest_records_total{pipeline,outcome,reason}``: records each declared pipeline
accepted, dropped (per reason of its set) and errored since it began (reason ``""`` but for
drops); ``litejobs_ingest_buffered{pipeline}`` and ``litejobs_ingest_buffer_capacity
{pipeline}``: its buffer's fill; ``litejobs_ingest_oldest_buffered_age_seconds{pipeline}``
(0: empty) and ``litejobs_ingest_stale{pipeline}`` (1 when a bounded pipeline's oldest
buffered record waited past its bound); ``litejobs_ingest_overflow_events_total
{pipeline,overflow}``. Labels are bounded by declarations: only declared pipelines, their
reasons and the overflow kinds.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from ..core.enums import IngestOutcome, Overflow
from ..core.features import Family, gauges
from . import operations


def families(now: datetime) -> Iterator[Family]:
    """Each declared pipeline's outcomes, buffer, freshness and overflow events."""
    records = Family(
        "litejobs_ingest_records",
        "Records the pipeline accepted, dropped (per reason) and errored since it began.",
        ("pipeline", "outcome", "reason"),
        counter=True,
    )
    buffered, capacity, oldest, stale = gauges(
        ("pipeline",),
        ("litejobs_ingest_buffered", "Records waiting in the pipeline's buffer."),
        (
            "litejobs_ingest_buffer_capacity",
            "Records the pipeline's buffer holds before its overflow applies.",
        ),
        (
            "litejobs_ingest_oldest_buffered_age_seconds",
            "How long the pipeline's oldest buffered record has waited (0: none).",
        ),
        (
            "litejobs_ingest_stale",
            "1 when a bounded pipeline's oldest buffered record waited past its bound.",
        ),
    )
    found = operations.summaries(now=now)
    for summary in found:
        name = summary.name
        records.add([name, IngestOutcome.ACCEPTED.value, ""], summary.accepted)
        for reason, count in summary.dropped.items():
            records.add([name, IngestOutcome.DROPPED.value, reason], count)
        records.add([name, IngestOutcome.ERRORED.value, ""], summary.errored)
        buffered.add([name], summary.buffered)
        capacity.add([name], summary.capacity)
        age = summary.oldest_age
        oldest.add([name], age.total_seconds() if age is not None else 0.0)
        stale.add([name], 1.0 if summary.stale else 0.0)
    yield from (records, buffered, capacity, oldest, stale)
    yield overflow_family([summary.name for summary in found])


def overflow_family(names: list[str]) -> Family:
    """Overflow events per pipeline of ``names`` (the declared ones) and overflow kind."""
    events = Family(
        "litejobs_ingest_overflow_events",
        "Feeds that found the pipeline's buffer full, per overflow kind.",
        ("pipeline", "overflow"),
        counter=True,
    )
    totals = operations.overflow_totals()
    for name in names:
        for kind in Overflow:
            events.add([name, kind.value], totals.get((name, kind.value), 0))
    return events
