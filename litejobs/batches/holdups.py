"""Why a job held by a batch or by its upstream jobs has not run: ``batch-callback`` (a
batch's callback, with the children left) and ``waiting-for-dependencies`` (the upstream jobs
not ended yet, with their states). Registered with ``litejobs.jobs.holdups`` as a reader,
asked before the claim's own conditions; no statement for a page without such a job."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db.models import Q
from django.utils.translation import ngettext

from ..conf import settings
from ..core.enums import JobState
from ..jobs import holdups
from ..jobs.holdups import HoldUp, HoldUpCode
from ..models import Batch, Job, JobDependency
from ..models.batches import WAITING_FOR_OTHERS


def register() -> None:
    """Add the reader to the hold-ups (once)."""
    if read not in holdups.READERS:
        holdups.READERS.append(read)


def held_by_others(job: Job) -> bool:
    """Is ``job`` held until other jobs end?"""
    return job.state == JobState.WAITING and job.run_at == WAITING_FOR_OTHERS


def read(jobs: Sequence[Job], now: datetime) -> dict[int, HoldUp]:
    """The hold-ups of the ``jobs`` held by a batch or by upstream jobs (three statements at
    most, none when no job is held so)."""
    held = {job.pk: job for job in jobs if held_by_others(job)}
    if not held:
        return {}
    found = _callbacks(held)
    found.update(_dependants({pk: job for pk, job in held.items() if pk not in found}))
    return found


def _callbacks(held: dict[int, Job]) -> dict[int, HoldUp]:
    found: dict[int, HoldUp] = {}
    batches = Batch.objects.using(settings.DATABASE).filter(
        Q(on_complete_job_id__in=list(held)) | Q(on_failure_job_id__in=list(held))
    )
    for batch in batches:
        for job_id, when in (
            (batch.on_complete_job_id, "every child has ended"),
            (batch.on_failure_job_id, "a child ends dead or cancelled"),
        ):
            if job_id in held:
                found[job_id] = callback_holdup(held[job_id], batch, when)
    return found


def callback_holdup(job: Job, batch: Batch, when: str) -> HoldUp:
    """The hold-up of ``batch``'s callback ``job``, released once ``when`` holds."""
    left = ngettext("%d child left", "%d children left", batch.pending) % batch.pending
    return HoldUp(
        HoldUpCode.BATCH_CALLBACK,
        f"The callback of batch {batch.pk}: enqueued once {when} ({left} of {batch.total}; "
        f"{batch.done} done, {batch.dead} dead, {batch.cancelled} cancelled).",
        job.queue,
        summary=f"Callback of batch {batch.pk}: {left}",
        batch=batch.pk,
        children_left=batch.pending,
    )


def _dependants(held: dict[int, Job]) -> dict[int, HoldUp]:
    if not held:
        return {}
    edges = list(
        JobDependency.objects.using(settings.DATABASE)
        .filter(job_id__in=list(held), resolved_at__isnull=True)
        .order_by("job_id", "upstream_id")
        .values_list("job_id", "upstream_id")
    )
    states = dict(
        Job.objects.using(settings.DATABASE)
        .filter(pk__in={upstream for _, upstream in edges})
        .values_list("pk", "state")
    )
    waits: dict[int, list[tuple[int, str]]] = {}
    for job_id, upstream in edges:
        waits.setdefault(job_id, []).append((upstream, str(states.get(upstream, "missing"))))
    return {job_id: dependency_holdup(held[job_id], waits[job_id]) for job_id in waits}


def dependency_holdup(job: Job, upstream: list[tuple[int, str]]) -> HoldUp:
    """The hold-up of ``job`` waiting on the ``upstream`` jobs (id, state) not ended yet."""
    named = ", ".join(f"#{job_id} ({state})" for job_id, state in upstream[:10])
    more = f" and {len(upstream) - 10} more" if len(upstream) > 10 else ""
    return HoldUp(
        HoldUpCode.WAITING_FOR_DEPENDENCIES,
        f"Waiting for the jobs it depends on to end: {named}{more}. It is released by the "
        "transaction that ends the last of them.",
        job.queue,
        summary=ngettext(
            "Waiting for %d upstream job", "Waiting for %d upstream jobs", len(upstream)
        )
        % len(upstream),
        upstream=tuple(upstream),
    )
