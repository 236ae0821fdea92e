"""The jobs of reports, declared when litejobs' app is ready (a job's declaration reads the
settings): the run job that writes a report's output page by page, and the built-in
``litejobs.reports_expire`` schedule that removes outputs past their lifetime.

A run is written once: the generic job retry refuses a finished run job whose run has ended
(its guard below), since running it again could only rewrite what the run left behind.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..conf import settings
from ..core.enums import REPORT_LIVE, TERMINAL
from ..core.retry import Retry
from ..exceptions import TransitionRefused
from ..jobs import operations
from ..jobs.arguments import Concurrency
from ..jobs.context import JobContext
from ..jobs.declarations import job, queue_name
from ..models import Job, ReportRun
from ..scheduling.declarations import schedule
from ..scheduling.housekeeping import HOUSEKEEPING_TIMEOUT
from . import expiry, running
from .declarations import RUN_JOB

__all__ = ["expire_reports", "run"]

logger = logging.getLogger(__name__)

#: The queue of the run job (read once, at declaration; litejobs.E084 reports a bad value).
QUEUE = settings.or_default("REPORT_QUEUE", queue_name)
#: Below the lease, as every schedule's timeout must be (the sweep stops between batches).
TIMEOUT = HOUSEKEEPING_TIMEOUT


@job(
    name=RUN_JOB,
    queue=QUEUE,
    key=lambda run_id: f"report-run:{run_id}",
    # The limit here is a floor: each run's row carries its report's max_concurrent setting.
    concurrency=Concurrency(key=lambda report: f"report:{report}", limit=1),
    atomic=False,
    timeout="1d",  # max_seconds, a setting row, bounds the run itself
    retry=Retry(attempts=10, backoff="exponential", base="5s", max="5m"),
)
def run(ctx: JobContext, run_id: int, report: str) -> dict[str, Any]:
    """Write a report run's output from its next page to its end."""
    return running.run_report(ctx, run_id)


@job(
    key=lambda: "litejobs.reports_expire",
    atomic=False,
    timeout=TIMEOUT,
    retry=Retry(attempts=3, backoff="exponential", base="30s", max="5m"),
)
def expire_reports(ctx: JobContext) -> dict[str, int]:
    """Remove report outputs past their lifetime and the parts of runs that ended."""
    return expiry.expire(should_stop=ctx.cancelled.is_set)


schedule(
    "litejobs.reports_expire",
    job=expire_reports,
    every="5m",
    misfire="run_once",
    overlap="forbid",
    timeout=TIMEOUT,
    retention="7d",
    operating_owner="the operators of this deployment",
    record_owner="litejobs (built in)",
    status="active",
)


def _refuse_job_retry(job_id: int, row: Mapping[str, Any], by: str) -> TransitionRefused | None:
    """A finished run job whose run has ended is not run again: a new run is a new request
    (its own parameters check, audit row and output)."""
    if row["name"] != RUN_JOB:
        return None
    alias = settings.DATABASE
    if not Job.objects.using(alias).filter(pk=job_id, state__in=TERMINAL).exists():
        return None  # waiting for its retry: its next attempt finds the run as it is
    run_id = (row["payload"] or {}).get("run_id")
    runs = ReportRun.objects.using(alias).filter(pk=run_id if isinstance(run_id, int) else 0)
    run = runs.values("report", "state").first()
    if run is not None and run["state"] in REPORT_LIVE:
        return None  # its job ended before the run did: a retry resumes it at its next page
    logger.info("job retry refused id=%s reason=report-run-ended run=%s by=%s", job_id, run_id, by)
    what = (
        f"report run #{run_id} of {run['report']}, which has ended ({run['state']})"
        if run is not None
        else f"report run #{run_id}, which no longer exists"
    )
    return TransitionRefused(
        f"Job {job_id} wrote {what}; a run is written once. Request the report again for a new "
        "run (the admin's Request a report, or report.request(...)).",
        code="report-run-ended",
    )


operations.retry_guards.register("report", _refuse_job_retry)
