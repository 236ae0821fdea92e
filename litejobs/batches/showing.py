"""How a batch shows to an operator (its admin page, ``batch show``): its counts as its
callback will see them, its children by their state now (a child an operator retried after
the callback shows here, not in the counts), and its callbacks' jobs."""

from __future__ import annotations

from typing import Any

from django.db.models import Count

from ..conf import settings
from ..core import clock
from ..models import Batch, Job
from .errors import BatchNotFound


def get_batch(batch_id: int) -> Batch:
    """The batch's record (``BatchNotFound`` when there is none)."""
    found = Batch.objects.using(settings.DATABASE).filter(pk=batch_id).first()
    if found is None:
        raise BatchNotFound(f"No batch has id {batch_id}.", code="batch-unknown")
    return found


def children_by_state(batch_id: int) -> dict[str, int]:
    """How many of the batch's children are in each state now."""
    rows = (
        Job.objects.using(settings.DATABASE)
        .filter(batch_id=batch_id)
        .order_by()
        .values_list("state")
        .annotate(n=Count("pk"))
    )
    return {str(state): int(count) for state, count in rows}


def _callback(name: str, job_id: int | None) -> dict[str, Any] | None:
    if not name:
        return None
    job = Job.objects.using(settings.DATABASE).filter(pk=job_id).first() if job_id else None
    return {
        "job": name,
        "job_id": job_id,
        "state": job.state if job else "purged",
        "released": bool(job) and job.run_at.year < 9999 if job else None,
        "started_at": clock.iso(job.started_at) if job else None,
        "finished_at": clock.iso(job.finished_at) if job else None,
    }


def batch_details(batch: Batch) -> dict[str, Any]:
    """Every column of the batch, its children by state and its callbacks, as JSON values."""
    progress = (batch.total - batch.pending) / batch.total if batch.total else 1.0
    return {
        "id": batch.pk,
        "label": batch.label,
        "state": batch.state,
        "sealed": batch.sealed,
        "total": batch.total,
        "pending": batch.pending,
        "counts": {"done": batch.done, "dead": batch.dead, "cancelled": batch.cancelled},
        "progress": round(progress, 4),
        "retried_after_callback": batch.retried_after,
        "children_by_state": children_by_state(batch.pk),
        "on_complete": _callback(batch.on_complete, batch.on_complete_job_id),
        "on_failure": _callback(batch.on_failure, batch.on_failure_job_id),
        "created_at": clock.iso(batch.created_at),
        "failed_at": clock.iso(batch.failed_at),
        "completed_at": clock.iso(batch.completed_at),
    }
