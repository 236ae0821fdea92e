"""litejobs' own schedules (declared when litejobs' app is ready): daily housekeeping, and the
rollup of the dashboard's per-minute job counters every ten minutes.

It runs every feature's purges (its ``Feature.purges``, see ``litejobs.core.features``), in
the features' order: finished jobs past ``LITEJOBS["RETENTION"]``, finished occurrences past
each schedule's retention, published outbox messages and finished webhook deliveries past
``LITEJOBS["OUTBOX_RETENTION"]``, what ingest pipelines keep past
``LITEJOBS["INGEST_RETENTION"]``. Each deletes in bounded batches, stopping between batches
when the job's timeout fires (the next day's run carries on). Disable it with ``manage.py
litejobs disable litejobs.housekeeping --reason ...`` if you purge another way.

``litejobs.minutes_rollup`` folds the counters of minutes past the dashboard's last hour into
one row per hour, queue, job name and outcome (``litejobs.jobs.minutes.fold_minutes``, one
statement), so the day chart reads about one row an hour per queue, name and outcome however
many worker sessions wrote them. Without it the charts stay right, only slower.
"""

from datetime import timedelta

from ..conf import settings
from ..core import clock, features
from ..core.retry import Retry
from ..jobs import minutes
from ..jobs.context import JobContext
from ..jobs.declarations import job
from .declarations import schedule

#: Below the lease, as every schedule's timeout must be (the run stops between batches). Read
#: while litejobs gets ready: an invalid LEASE falls back to its default (litejobs.E004).
HOUSEKEEPING_TIMEOUT = max(settings.duration_or_default("LEASE") * 3 / 4, timedelta(seconds=1))


@job(
    key=lambda: "litejobs.housekeeping",
    atomic=False,  # each purge batch commits on its own; a rerun carries on where it stopped
    timeout=HOUSEKEEPING_TIMEOUT,
    retry=Retry(attempts=3, backoff="exponential", base="1m", max="10m"),
)
def housekeeping(ctx: JobContext) -> dict[str, dict[str, int]]:
    """Run every feature's purges, in the features' order; answers their counts by name."""
    stop = ctx.cancelled.is_set
    return {
        name: dict(purge(by="litejobs.housekeeping", should_stop=stop))
        for feature in features.installed()
        for name, purge in feature.purges.items()
    }


schedule(
    "litejobs.housekeeping",
    job=housekeeping,
    cron="17 3 * * *",
    timezone="UTC",
    misfire="run_once",
    # Purges skip locked rows and delete in bounded batches: two runs at once are harmless.
    overlap="allow",
    timeout=HOUSEKEEPING_TIMEOUT,
    retention="30d",
    operating_owner="the operators of this deployment",
    record_owner="litejobs (built in)",
    status="active",
)


@job(
    key=lambda: "litejobs.minutes_rollup",
    atomic=False,  # one statement, committed on its own
    timeout=HOUSEKEEPING_TIMEOUT,
    retry=Retry(attempts=3, backoff="exponential", base="30s", max="5m"),
)
def minutes_rollup(ctx: JobContext) -> dict[str, int]:
    """Fold the per-minute job counters past the dashboard's last hour into hourly rows."""
    return {"folded": minutes.fold_minutes(clock.now())}


schedule(
    "litejobs.minutes_rollup",
    job=minutes_rollup,
    every="10m",
    misfire="run_once",
    # One statement that neither loses nor doubles counts when two run at once.
    overlap="allow",
    timeout=HOUSEKEEPING_TIMEOUT,
    retention="1d",
    operating_owner="the operators of this deployment",
    record_owner="litejobs (built in)",
    status="active",
)
