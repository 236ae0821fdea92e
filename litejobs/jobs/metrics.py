"""The job queue's metric families (``Feature.metrics``; the metrics add-on serves them):

- ``litejobs_jobs{queue,state}`` and ``litejobs_queue_oldest_due_age_seconds{queue}``: jobs per
  state and the age of the oldest due job; ``litejobs_queue_depth{queue}``: jobs due now and
  waiting for a worker; ``litejobs_dead_jobs{queue}``: dead jobs kept (within retention);
- ``litejobs_workers_alive``: worker processes whose lease is current;
- ``litejobs_failed_attempts{job,outcome}``: attempts that did not succeed, kept (within
  retention), and ``litejobs_leases_lost``: those whose worker lost its lease; ``job`` is a
  declared job's name or ``other``.

Queue labels are the queues that have jobs, a switch or a declaration.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from django.db.models import Count

from ..conf import settings
from ..core import clock
from ..core.enums import AttemptOutcome, JobState
from ..core.features import Family, gauges
from ..models import JobAttempt, Worker
from . import catalog, queues

#: The ``job`` label of every name that is not declared.
OTHER = "other"


def families(now: datetime) -> Iterator[Family]:
    """Every job family, freshly read."""
    yield from queue_families(now)
    yield workers_alive()
    yield from attempt_families()


def declared_names() -> set[str]:
    """The job names a ``job`` label may take besides ``OTHER``."""
    return {definition.name for definition in catalog.all_jobs()}


def queue_families(now: datetime) -> Iterator[Family]:
    """Job counts per queue and state, and the oldest due job's age."""
    depth = Family("litejobs_jobs", "Jobs per queue and state.", ("queue", "state"))
    oldest, due, dead = gauges(
        ("queue",),
        (
            "litejobs_queue_oldest_due_age_seconds",
            "How long the oldest due job of the queue has waited.",
        ),
        ("litejobs_queue_depth", "Jobs of the queue due now, waiting for a worker."),
        (
            "litejobs_dead_jobs",
            "Dead jobs of the queue kept (within retention): they wait for an operator.",
        ),
    )
    for summary in queues.queue_overview(now=now):
        for state, count in summary.counts.items():
            depth.add([summary.name, state], count)
        age = summary.oldest_due_age.total_seconds() if summary.oldest_due_age else 0.0
        oldest.add([summary.name], age)
        due.add([summary.name], summary.due)
        dead.add([summary.name], summary.counts.get(JobState.DEAD.value, 0))
    yield from (depth, oldest, due, dead)


def workers_alive() -> Family:
    """How many worker processes are alive: their lease is current (the database's clock,
    as the reaper compares it)."""
    alias = settings.DATABASE
    alive = (
        Worker.objects.using(alias).filter(lease_expires_at__gt=clock.database_now(alias)).count()
    )
    return Family(
        "litejobs_workers_alive", "Worker processes whose lease is current.", samples=[((), alive)]
    )


def attempt_families() -> Iterator[Family]:
    """Failed attempts kept, per declared job and outcome; and lost leases."""
    declared = declared_names()
    failed = Family(
        "litejobs_failed_attempts",
        "Attempts that did not succeed, kept (within retention), per job and outcome.",
        ("job", "outcome"),
    )
    rows = (
        JobAttempt.objects.using(settings.DATABASE)
        .order_by()
        .values_list("job__name", "outcome")
        .annotate(n=Count("pk"))
    )
    folded: dict[tuple[str, str], int] = {}
    for name, outcome, count in rows:
        label = name if name in declared else OTHER
        folded[label, outcome] = folded.get((label, outcome), 0) + count
    for labels, count in sorted(folded.items()):
        failed.add(labels, count)
    yield failed
    lost = sum(n for (_, outcome), n in folded.items() if outcome == AttemptOutcome.LEASE_EXPIRED)
    yield Family(
        "litejobs_leases_lost",
        "Attempts kept (within retention) whose worker lost its lease before they ended.",
        samples=[((), lost)],
    )
