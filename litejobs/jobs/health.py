"""What ``doctor`` finds about jobs: jobs held for an operator, recent dead jobs, running
jobs whose lease lapsed, and jobs waiting for a worker whose code can run them. (Each job
queue's problems are ``litejobs.jobs.queues``'.)"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import QuerySet
from django.utils.translation import ngettext

from ..conf import settings
from ..core.diagnostics import Problem
from ..core.durations import format_duration
from ..core.enums import CLAIMABLE, JobState
from ..models import Job
from . import holdups
from .steps import HELD

#: How far back ``doctor`` looks for dead jobs.
DEAD_LOOKBACK = timedelta(days=1)
#: Job ids a problem lists (the count says how many there are).
PROBLEM_IDS = 10


def _jobs() -> QuerySet[Job]:
    return Job.objects.using(settings.DATABASE)


def _shown(name: str) -> str:
    """A duration setting as messages show it (``20s``, ``1h``)."""
    return format_duration(settings.duration_or_default(name))


def _ids(queryset: QuerySet[Job]) -> tuple[int, ...]:
    return tuple(queryset.order_by("-pk").values_list("pk", flat=True)[:PROBLEM_IDS])


def _held_for_operator() -> list[Problem]:
    """``held-for-operator``: jobs whose ``once=True`` step's outcome is unknown, each waiting
    for ``resolve-step`` (the oldest first; nothing else will ever run them)."""
    held = _jobs().filter(state=JobState.WAITING, run_at__gte=HELD)
    count = held.count()
    if not count:
        return []
    ids = tuple(held.order_by("pk").values_list("pk", flat=True)[:PROBLEM_IDS])
    steps = holdups.unknown_steps(ids)
    commands = "; ".join(
        f"`{holdups.resolve_command(job_id, name)}`"
        for job_id in ids
        for name in steps.get(job_id, ())[:1]
    )
    return [
        Problem(
            "held-for-operator",
            ngettext(
                "%(n)d job is held for an operator",
                "%(n)d jobs are held for an operator",
                count,
            )
            % {"n": count}
            + ": a once=True step was started but its outcome was never recorded (its worker "
            "stopped mid-step), so it is not run again blindly. Check whether it took effect, "
            f"then say so: {commands}.",
            count=count,
            job_ids=ids,
        )
    ]


def problems(*, now: datetime, lease_now: datetime) -> list[Problem]:
    """What ``doctor`` reports about jobs: jobs held for an operator (``held-for-operator``),
    recent dead jobs (``dead-jobs``), running jobs whose lease lapsed (``lease-lapsed``,
    judged on the database's clock, as the workers judge it) and jobs waiting for a worker
    whose code can run them (``unknown-job``)."""
    problems: list[Problem] = _held_for_operator()
    dead = _jobs().filter(state=JobState.DEAD, finished_at__gte=now - DEAD_LOOKBACK)
    dead_count = dead.count()
    if dead_count:
        problems.append(
            Problem(
                "dead-jobs",
                ngettext("%(n)d job died", "%(n)d jobs died", dead_count)
                % {"n": dead_count}
                + " in the last day (attempts spent or a permanent error). Read their errors "
                "with `manage.py litejobs show ID`, fix the cause, then `manage.py litejobs "
                "retry ID`.",
                count=dead_count,
                job_ids=_ids(dead),
            )
        )

    lapsed = _jobs().filter(state=JobState.RUNNING, lease_expires_at__lt=lease_now)
    lapsed_count = lapsed.count()
    if lapsed_count:
        problems.append(
            Problem(
                "lease-lapsed",
                ngettext(
                    "%(n)d running job holds a lease that lapsed",
                    "%(n)d running jobs hold leases that lapsed",
                    lapsed_count,
                )
                % {"n": lapsed_count}
                + ": their worker stopped renewing (crashed, killed or cut off). A live worker "
                "reaps them at its next "
                "heartbeat and runs them again; if none does, start `manage.py runworker`.",
                count=lapsed_count,
                job_ids=_ids(lapsed),
            )
        )

    handed_back = _jobs().filter(state__in=CLAIMABLE, handed_back_at__isnull=False)
    handed_back_count = handed_back.count()
    if handed_back_count:
        names = sorted(set(handed_back.order_by().values_list("name", flat=True)[:PROBLEM_IDS]))
        problems.append(
            Problem(
                "unknown-job",
                ngettext("%(n)d job waits", "%(n)d jobs wait", handed_back_count)
                % {"n": handed_back_count}
                + " for a worker whose code can run them (their "
                f"name, or their payload version, is newer than the workers that claimed them: "
                f"{', '.join(names)}). Deploy the release that declares them to every worker; "
                f"each is dead-lettered UNKNOWN_JOB_GRACE ({_shown('UNKNOWN_JOB_GRACE')}) after "
                "it was first handed back.",
                count=handed_back_count,
                job_ids=_ids(handed_back),
            )
        )

    return problems
