"""Prometheus metrics, read from the database at scrape time (nothing kept in memory).

``LitejobsCollector`` is a prometheus-client custom collector: each scrape runs a few small
queries and answers gauges, so any number of web processes serve the same numbers and a
restarted one loses nothing. Mount ``litejobs.views.metrics`` (the demo serves it at
``/metrics``), or register the collector in your own registry. Families:

- ``litejobs_schedule_last_success_timestamp_seconds{schedule}``: when its latest successful
  occurrence completed (absent until one has) — alert on ``time() - ...``;
- ``litejobs_schedule_overdue{schedule}``: 1 when no occurrence completed within its period
  plus grace (the admin's flag, ``doctor``'s ``overdue-schedule``);
- ``litejobs_schedule_enabled{schedule}``: 0 while an operator has it disabled;
- ``litejobs_occurrences{schedule,state}``: occurrences kept, per state;
- ``litejobs_jobs{queue,state}`` and ``litejobs_queue_oldest_due_age_seconds{queue}``: jobs per
  state and the age of the oldest due job; ``litejobs_queue_depth{queue}``: jobs due now and
  waiting for a worker; ``litejobs_dead_jobs{queue}``: dead jobs kept (within retention);
- ``litejobs_workers_alive``: worker processes whose lease is current;
- ``litejobs_failed_attempts{job,outcome}``: attempts that did not succeed, kept (within
  retention), and ``litejobs_leases_lost``: those whose worker lost its lease; ``job`` is a
  declared job's name or ``other``;
- with a source of tallies (``LitejobsCollector(tallies=...)``, see ``attempts``):
  ``litejobs_job_attempts_total{job,outcome}`` and the histogram
  ``litejobs_job_duration_seconds{job,outcome}``;
- ``litejobs_outbox_pending`` and ``litejobs_outbox_oldest_pending_age_seconds``: messages the
  relay has not published yet — alert when the age grows;
- ``litejobs_webhook_endpoint_enabled{endpoint}`` and
  ``litejobs_webhook_endpoint_consecutive_failures{endpoint}``; ``litejobs_webhook_deliveries
  {state}``: retained delivery records per state;
- ``litejobs_ingest_records_total{pipeline,outcome,reason}``: records each declared pipeline
  accepted, dropped (per reason of its set) and errored since it began (reason ``""`` but
  for drops); ``litejobs_ingest_buffered{pipeline}`` and
  ``litejobs_ingest_buffer_capacity{pipeline}``: its buffer's fill;
  ``litejobs_ingest_oldest_buffered_age_seconds{pipeline}`` (0: empty) and
  ``litejobs_ingest_stale{pipeline}`` (1 when a bounded pipeline's oldest buffered record
  waited past its bound); ``litejobs_ingest_overflow_events_total{pipeline,overflow}``.
  Labels are bounded by declarations: only declared pipelines, their reasons and the
  overflow kinds.

Further job metrics are added as methods yielding families from ``collect``. Queue labels
are the queues that have jobs, a switch or a declaration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime

from django.db.models import Count
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ..conf import settings
from ..core import clock
from ..core.enums import AttemptOutcome, IngestOutcome, JobState, Overflow
from ..ingest import operations as ingest_operations
from ..jobs import catalog, minutes, queues
from ..models import BUCKET_BOUNDS, JobAttempt, Occurrence, WebhookDelivery, WebhookEndpoint, Worker
from ..outbox import operations as outbox_operations
from ..scheduling import health
from . import attempts


def counted_tallies() -> list[attempts.Tally]:
    """The attempts the settling statements counted (the per-minute job counters, with the
    totals carried past their retention), as the attempt counter and histogram read them."""
    return [
        attempts.Tally(total.name, total.outcome, total.count, total.duration_sum, total.buckets)
        for total in minutes.started_totals()
    ]


class LitejobsCollector(Collector):
    """Answers litejobs' gauges from the database on every scrape."""

    def __init__(
        self,
        tallies: Callable[[], Iterable[attempts.Tally]] | None = counted_tallies,
        bounds: Sequence[float] = BUCKET_BOUNDS,
    ) -> None:
        #: Where the attempt counter and duration histogram come from (none: not served).
        self.tallies = tallies
        self.bounds = bounds

    def collect(self) -> Iterator[Metric]:
        """Every family, freshly read."""
        now = clock.now()
        yield from self.schedule_metrics(now)
        yield from self.queue_metrics(now)
        yield from self.worker_metrics()
        yield from self.attempt_metrics()
        yield from self.outbox_metrics(now)
        yield from self.ingest_metrics(now)

    def schedule_metrics(self, now: datetime) -> Iterator[Metric]:
        """Last success, overdue flag, switch and occurrence counts per schedule."""
        last_success = GaugeMetricFamily(
            "litejobs_schedule_last_success_timestamp_seconds",
            "Unix time the schedule's latest successful occurrence completed.",
            labels=["schedule"],
        )
        overdue = GaugeMetricFamily(
            "litejobs_schedule_overdue",
            "1 when no occurrence completed within the schedule's period plus grace.",
            labels=["schedule"],
        )
        enabled = GaugeMetricFamily(
            "litejobs_schedule_enabled",
            "0 while an operator has the schedule disabled.",
            labels=["schedule"],
        )
        for state in health.all_health(now):
            row = state.row
            if row.last_success_at is not None:
                last_success.add_metric([row.name], row.last_success_at.timestamp())
            overdue.add_metric([row.name], 1.0 if state.health.overdue else 0.0)
            enabled.add_metric([row.name], 1.0 if row.enabled else 0.0)
        yield last_success
        yield overdue
        yield enabled
        occurrences = GaugeMetricFamily(
            "litejobs_occurrences",
            "Occurrences kept (within retention), per schedule and state.",
            labels=["schedule", "state"],
        )
        rows = (
            Occurrence.objects.using(settings.DATABASE)
            .order_by()
            .values_list("schedule__name", "state")
            .annotate(n=Count("pk"))
        )
        for name, state, count in rows:
            occurrences.add_metric([name, state], count)
        yield occurrences

    def queue_metrics(self, now: datetime) -> Iterator[Metric]:
        """Job counts per queue and state, and the oldest due job's age."""
        depth = GaugeMetricFamily(
            "litejobs_jobs", "Jobs per queue and state.", labels=["queue", "state"]
        )
        oldest = GaugeMetricFamily(
            "litejobs_queue_oldest_due_age_seconds",
            "How long the oldest due job of the queue has waited.",
            labels=["queue"],
        )
        due = GaugeMetricFamily(
            "litejobs_queue_depth",
            "Jobs of the queue due now, waiting for a worker.",
            labels=["queue"],
        )
        dead = GaugeMetricFamily(
            "litejobs_dead_jobs",
            "Dead jobs of the queue kept (within retention): they wait for an operator.",
            labels=["queue"],
        )
        for summary in queues.queue_overview(now=now):
            for state, count in summary.counts.items():
                depth.add_metric([summary.name, state], count)
            age = summary.oldest_due_age.total_seconds() if summary.oldest_due_age else 0.0
            oldest.add_metric([summary.name], age)
            due.add_metric([summary.name], summary.due)
            dead.add_metric([summary.name], summary.counts.get(JobState.DEAD.value, 0))
        yield from (depth, oldest, due, dead)

    def worker_metrics(self) -> Iterator[Metric]:
        """How many worker processes are alive: their lease is current (the database's clock,
        as the reaper compares it)."""
        alias = settings.DATABASE
        alive = (
            Worker.objects.using(alias)
            .filter(lease_expires_at__gt=clock.database_now(alias))
            .count()
        )
        yield GaugeMetricFamily(
            "litejobs_workers_alive",
            "Worker processes whose lease is current.",
            value=alive,
        )

    def attempt_metrics(self) -> Iterator[Metric]:
        """Failed attempts kept, per declared job and outcome; lost leases; and the attempt
        counter and duration histogram when a source of tallies is wired in."""
        declared = {definition.name for definition in catalog.all_jobs()}
        failed = GaugeMetricFamily(
            "litejobs_failed_attempts",
            "Attempts that did not succeed, kept (within retention), per job and outcome.",
            labels=["job", "outcome"],
        )
        rows = (
            JobAttempt.objects.using(settings.DATABASE)
            .order_by()
            .values_list("job__name", "outcome")
            .annotate(n=Count("pk"))
        )
        folded: dict[tuple[str, str], int] = {}
        for name, outcome, count in rows:
            label = name if name in declared else attempts.OTHER
            folded[label, outcome] = folded.get((label, outcome), 0) + count
        for labels, count in sorted(folded.items()):
            failed.add_metric(list(labels), count)
        yield failed
        lost = sum(
            n for (_, outcome), n in folded.items() if outcome == AttemptOutcome.LEASE_EXPIRED
        )
        yield GaugeMetricFamily(
            "litejobs_leases_lost",
            "Attempts kept (within retention) whose worker lost its lease before they ended.",
            value=lost,
        )
        if self.tallies is not None:
            yield from attempts.families(self.tallies(), declared, self.bounds)

    def outbox_metrics(self, now: datetime) -> Iterator[Metric]:
        """The outbox backlog, each webhook endpoint's health, deliveries per state."""
        waiting = outbox_operations.backlog(now=now)
        yield GaugeMetricFamily(
            "litejobs_outbox_pending",
            "Outbox messages the relay has not published yet.",
            value=waiting.pending,
        )
        yield GaugeMetricFamily(
            "litejobs_outbox_oldest_pending_age_seconds",
            "How long the oldest unpublished outbox message has waited (0: none).",
            value=waiting.oldest_age.total_seconds() if waiting.oldest_age else 0.0,
        )
        enabled = GaugeMetricFamily(
            "litejobs_webhook_endpoint_enabled",
            "0 while the endpoint is disabled (by an operator, or after failures).",
            labels=["endpoint"],
        )
        failures = GaugeMetricFamily(
            "litejobs_webhook_endpoint_consecutive_failures",
            "Failed delivery attempts since the endpoint's last success.",
            labels=["endpoint"],
        )
        endpoints = WebhookEndpoint.objects.using(settings.DATABASE).values_list(
            "pk", "enabled", "consecutive_failures"
        )
        for pk, is_enabled, streak in endpoints:
            enabled.add_metric([str(pk)], 1.0 if is_enabled else 0.0)
            failures.add_metric([str(pk)], streak)
        yield enabled
        yield failures
        deliveries = GaugeMetricFamily(
            "litejobs_webhook_deliveries",
            "Webhook delivery records kept (within retention), per state.",
            labels=["state"],
        )
        rows = (
            WebhookDelivery.objects.using(settings.DATABASE)
            .order_by()
            .values_list("state")
            .annotate(n=Count("pk"))
        )
        for state, count in rows:
            deliveries.add_metric([state], count)
        yield deliveries

    def ingest_metrics(self, now: datetime) -> Iterator[Metric]:
        """Each declared pipeline's outcomes, buffer, freshness and overflow events."""
        records = CounterMetricFamily(
            "litejobs_ingest_records",
            "Records the pipeline accepted, dropped (per reason) and errored since it began.",
            labels=["pipeline", "outcome", "reason"],
        )
        buffered = GaugeMetricFamily(
            "litejobs_ingest_buffered",
            "Records waiting in the pipeline's buffer.",
            labels=["pipeline"],
        )
        capacity = GaugeMetricFamily(
            "litejobs_ingest_buffer_capacity",
            "Records the pipeline's buffer holds before its overflow applies.",
            labels=["pipeline"],
        )
        oldest = GaugeMetricFamily(
            "litejobs_ingest_oldest_buffered_age_seconds",
            "How long the pipeline's oldest buffered record has waited (0: none).",
            labels=["pipeline"],
        )
        stale = GaugeMetricFamily(
            "litejobs_ingest_stale",
            "1 when a bounded pipeline's oldest buffered record waited past its bound.",
            labels=["pipeline"],
        )
        found = ingest_operations.summaries(now=now)
        for summary in found:
            name = summary.name
            records.add_metric([name, IngestOutcome.ACCEPTED.value, ""], summary.accepted)
            for reason, count in summary.dropped.items():
                records.add_metric([name, IngestOutcome.DROPPED.value, reason], count)
            records.add_metric([name, IngestOutcome.ERRORED.value, ""], summary.errored)
            buffered.add_metric([name], summary.buffered)
            capacity.add_metric([name], summary.capacity)
            age = summary.oldest_age
            oldest.add_metric([name], age.total_seconds() if age is not None else 0.0)
            stale.add_metric([name], 1.0 if summary.stale else 0.0)
        yield from (records, buffered, capacity, oldest, stale)
        yield self.overflow_metric([summary.name for summary in found])

    def overflow_metric(self, names: list[str]) -> Metric:
        """Overflow events per pipeline of ``names`` (the declared ones) and overflow kind."""
        events = CounterMetricFamily(
            "litejobs_ingest_overflow_events",
            "Feeds that found the pipeline's buffer full, per overflow kind.",
            labels=["pipeline", "overflow"],
        )
        totals = ingest_operations.overflow_totals()
        for name in names:
            for kind in Overflow:
                events.add_metric([name, kind.value], totals.get((name, kind.value), 0))
        return events


def registry(
    tallies: Callable[[], Iterable[attempts.Tally]] | None = counted_tallies,
) -> CollectorRegistry:
    """A registry holding only litejobs' collector (the view serves it), with ``tallies`` as
    the source of its attempt counter and duration histogram."""
    own = CollectorRegistry(auto_describe=False)
    own.register(LitejobsCollector(tallies=tallies))
    return own
