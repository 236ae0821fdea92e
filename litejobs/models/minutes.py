"""Per-minute job counters: what the dashboard charts and the metrics read instead of the job
table.

The statements that settle jobs (``complete``, ``complete_batch``, ``fail``, ``discard``,
``cancel`` and the heartbeat's sweep of lapsed leases, in ``litejobs/sql``) add to these rows
in the same statement, as a data-modifying CTE: counting costs no extra round trip and no
extra statement per job, and a counter is written exactly when its job's change commits.

A row is keyed by (minute, queue, name, outcome, shard). ``shard`` is the PostgreSQL backend
pid of the writing session: two transactions running at once never share a session, so
concurrent workers (and an atomic job's long transaction) never wait on each other's counter
row; the readers sum over shards. Shard 0, which no session has, holds folded counts: past the
dashboard's last hour, one row per hour (``litejobs.jobs.minutes.fold_minutes``); past two
days, the carried totals at minute 'epoch' (``purge_minutes``).

Durations (start → settle) and latencies (due → start, ``run_at`` being when the job, or its
retry, became due) are kept as sums and as histograms with the fixed bucket bounds
``BUCKET_BOUNDS``: bucket 0 counts values below the first bound, bucket ``i`` values from
bound ``i - 1`` up to (not including) bound ``i``, the last one everything from the last bound
on. Percentiles are estimated from them by linear interpolation within the bucket, as
Prometheus' ``histogram_quantile`` does (``litejobs.jobs.minutes.quantile``). The settling
statements bucket with ``width_bucket`` over the same bounds (``litejobs.sql``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models

from ..core.enums import MinuteOutcome
from ..core.histogram import BUCKET_BOUNDS

__all__ = ["BUCKET_BOUNDS", "JobMinute", "MinuteOutcome"]


if TYPE_CHECKING:
    # The stubs' Field is generic in what it is set to and what it reads; Django's is not.
    _Field = models.Field[list[int], list[int]]
else:
    _Field = models.Field


class BucketCounts(_Field):
    """A PostgreSQL ``bigint[]`` of histogram bucket counts (read as a list of ints).

    A field of its own rather than ``ArrayField``, which would require
    ``django.contrib.postgres`` in every project's INSTALLED_APPS."""

    description = "Histogram bucket counts"

    def db_type(self, connection: Any) -> str:
        return "bigint[]"


class JobMinute(models.Model):
    """How many jobs of one name and queue settled one way in one minute, by one session."""

    pk = models.CompositePrimaryKey("minute", "queue", "name", "outcome", "shard")
    minute = models.DateTimeField(help_text="The minute (UTC) the jobs settled in.")
    queue = models.CharField(max_length=200)
    name = models.CharField(max_length=200)
    outcome = models.CharField(max_length=16, choices=MinuteOutcome.choices)
    shard = models.IntegerField(help_text="The writing session (its backend pid).")
    count = models.BigIntegerField(default=0)
    timed = models.BigIntegerField(
        default=0, help_text="How many of them had started (have a duration and a latency)."
    )
    duration_sum = models.FloatField(default=0, help_text="Seconds from start to settle.")
    latency_sum = models.FloatField(default=0, help_text="Seconds from due to start.")
    duration_buckets = BucketCounts()
    latency_buckets = BucketCounts()

    class Meta:
        db_table = "litejobs_jobminute"

    def __str__(self) -> str:
        return f"{self.minute:%Y-%m-%d %H:%M} {self.queue}/{self.name} {self.outcome}: {self.count}"
