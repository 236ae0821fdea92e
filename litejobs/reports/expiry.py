"""Outputs past their lifetime removed, and runs whose job ended without them ended too.

The built-in ``litejobs.reports_expire`` schedule runs this every few minutes: a ``done`` run
past ``expires_at`` has its parts and manifest removed and reads ``expired``; a live run whose
job is dead, cancelled or deleted (no worker will finish it) is failed and its parts removed; a
stopped, failed or cancelled run whose parts a worker could not remove has them removed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db.models import Exists, OuterRef, Q, QuerySet

from ..conf import settings
from ..core import clock
from ..core.enums import REPORT_LIVE, JobState, ReportState
from ..models import Job, ReportRun
from . import auditing, storage

__all__ = ["expire"]

logger = logging.getLogger(__name__)

#: Runs handled per batch.
BATCH = 200


def expire(*, should_stop: Callable[[], bool] = lambda: False) -> dict[str, int]:
    """Remove expired outputs and the parts of ended runs; answers the counts."""
    orphaned = _fail_orphans()
    removed = 0
    while not should_stop():
        batch = list(_removable()[:BATCH])
        if not batch:
            break
        for run in batch:
            _remove(run)
        removed += len(batch)
    return {"removed": removed, "orphaned": orphaned}


def _removable() -> QuerySet[ReportRun]:
    ended = [ReportState.STOPPED, ReportState.FAILED, ReportState.CANCELLED, ReportState.EXPIRED]
    return (
        ReportRun.objects.using(settings.DATABASE)
        .filter(removed_at__isnull=True)
        .filter(Q(state=ReportState.DONE, expires_at__lte=clock.now()) | Q(state__in=ended))
        .order_by("id")
    )


def _remove(run: ReportRun) -> None:
    storage.remove(storage.get(run.storage), run.output_path)
    now = clock.now()
    state = ReportState.EXPIRED if run.state == ReportState.DONE else run.state
    ReportRun.objects.using(settings.DATABASE).filter(pk=run.pk).update(state=state, removed_at=now)
    logger.info("Report run #%s of %s: output removed (%s)", run.pk, run.report, state)


def _fail_orphans() -> int:
    """Fail live runs whose job has ended (dead or cancelled) or is gone (deleted) without
    them: nothing will write them."""
    jobs = Job.objects.using(settings.DATABASE)
    ended = jobs.filter(pk=OuterRef("job_id"), state__in=[JobState.DEAD, JobState.CANCELLED])
    orphans = (
        ReportRun.objects.using(settings.DATABASE)
        .filter(state__in=REPORT_LIVE, job_id__isnull=False)
        .filter(Exists(ended) | ~Exists(jobs.filter(pk=OuterRef("job_id"))))
    )
    ids = list(orphans.values_list("id", flat=True))
    ReportRun.objects.using(settings.DATABASE).filter(id__in=ids, state__in=REPORT_LIVE).update(
        state=ReportState.FAILED,
        stop_reason="report-job-ended",
        error="Its job ended (dead, cancelled or deleted) before the run finished.",
        finished_at=clock.now(),
    )
    for run in ReportRun.objects.using(settings.DATABASE).filter(id__in=ids):
        auditing.ended(run)
    return len(ids)
