"""Batches' metric families (``Feature.metrics``; the metrics add-on serves them):

``litejobs_batches{state}``: batches open and completed (kept until purged with their jobs'
retention); ``litejobs_batch_completion_latency_seconds{batch}``: for the batches completed in
the last hour (at most ``RECENT`` of them, the latest), how long their callback took to start
after their last child ended (still waiting: how long so far). Labels are bounded: two states,
``RECENT`` batches.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from ..conf import settings
from ..core.enums import BatchState
from ..core.features import Family
from ..models import Batch, Job

#: The latest batches whose completion latency is served.
RECENT = 20
_WINDOW = timedelta(hours=1)


def families(now: datetime) -> Iterator[Family]:
    """The batches by state, and the completion latency of the latest completed ones."""
    batches = Family("litejobs_batches", "Batches by state.", ("state",))
    batches.add_counts(Batch.objects.using(settings.DATABASE), "state")
    yield batches
    latency = Family(
        "litejobs_batch_completion_latency_seconds",
        "From a batch's last child ending to its on_complete job starting (still waiting: so "
        "far), for the batches completed in the last hour.",
        ("batch",),
    )
    for batch_id, seconds in completion_latencies(now).items():
        latency.add([str(batch_id)], seconds)
    yield latency


def completion_latencies(now: datetime) -> dict[int, float]:
    """Batch id -> seconds from its last child's end to its callback's start (or to ``now``
    when it has not started), for the latest batches completed in the last hour."""
    recent = list(
        Batch.objects.using(settings.DATABASE)
        .filter(state=BatchState.COMPLETED, completed_at__gte=now - _WINDOW)
        .exclude(on_complete_job_id=None)
        .order_by("-completed_at")
        .values_list("pk", "completed_at", "on_complete_job_id")[:RECENT]
    )
    started = dict(
        Job.objects.using(settings.DATABASE)
        .filter(pk__in=[job_id for _, _, job_id in recent])
        .values_list("pk", "started_at")
    )
    found = {}
    for batch_id, completed_at, job_id in recent:
        began = (started.get(job_id) if job_id is not None else None) or now
        if completed_at is not None:
            found[batch_id] = max((began - completed_at).total_seconds(), 0.0)
    return found
