"""The jobs of reports, declared when litejobs' app is ready (a job's declaration reads the
settings): the run job that writes a report's output page by page, and the built-in
``litejobs.reports_expire`` schedule that removes outputs past their lifetime."""

from __future__ import annotations

from typing import Any

from ..conf import settings
from ..core.retry import Retry
from ..jobs.context import JobContext
from ..jobs.declarations import Concurrency, job, queue_name
from ..scheduling.declarations import schedule
from ..scheduling.housekeeping import HOUSEKEEPING_TIMEOUT
from . import expiry, running
from .declarations import RUN_JOB

__all__ = ["expire_reports", "run"]

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
