"""Batches and job dependencies: a batch's counts and callbacks, and each job's upstream jobs.

A job's ending settles what it belongs to in the transaction that writes the ending, whichever
path writes it (a completion, a failure's dead end, a dropped job, a cancel, an operator's
action): the job table's triggers ``litejobs_member_settled`` and ``litejobs_member_dropped``
call the SQL functions of migration ``0027_batches``. Their ``WHEN`` reads two columns that are
NULL or false on every job outside a batch without dependants, so such a job pays nothing.

A job held until others end (a batch's callback, a job waiting on its upstream jobs) is
``waiting`` with ``run_at`` at ``WAITING_FOR_OTHERS``: the claim never finds it due, and the
trigger that releases it makes it ``ready``.
"""

from datetime import UTC, datetime

import pgtrigger
from django.db import models
from django.db.models import Q

from ..core.enums import TERMINAL, BatchState, UpstreamPolicy, sql_list
from .triggers import after_update

#: ``run_at`` of a job held until other jobs end (before ``litejobs.jobs.steps.HELD``, the
#: operator's hold, so neither is taken for the other).
WAITING_FOR_OTHERS = datetime(9999, 12, 30, tzinfo=UTC)
#: The error class of a job its upstream's failure cancelled, and of one it skipped.
UPSTREAM_FAILED = "litejobs.UpstreamFailed"
UPSTREAM_SKIPPED = "litejobs.UpstreamSkipped"

_MEMBER = "(NEW.batch_id IS NOT NULL OR NEW.has_dependants)"
_ENDS = f"NEW.state IN ({sql_list(TERMINAL)})"
_ENDED = f"OLD.state IN ({sql_list(TERMINAL)})"

_SETTLED = """
    PERFORM litejobs_member_settled(
        NEW.id, NEW.batch_id, NEW.has_dependants, OLD.state, NEW.state, NEW.error_class,
        COALESCE(NEW.finished_at, statement_timestamp()));
    RETURN NULL;
"""
_DROPPED = """
    PERFORM litejobs_member_settled(
        OLD.id, OLD.batch_id, OLD.has_dependants, OLD.state, 'dead', '', statement_timestamp());
    RETURN NULL;
"""


def member_triggers() -> list[pgtrigger.Trigger]:
    """The job table's triggers settling a batch's counts and a job's dependants: on a move
    into or out of a final state (an operator's retry moves out), and on the delete of a job
    that had not ended (a spent ``dead_letter=False`` job; a purge deletes ended jobs only)."""
    return [
        after_update(
            "litejobs_member_settled",
            f"({_MEMBER} AND OLD.state IS DISTINCT FROM NEW.state AND ({_ENDS}) <> ({_ENDED}))",
            _SETTLED,
        ),
        pgtrigger.Trigger(
            name="litejobs_member_dropped",
            when=pgtrigger.After,
            operation=pgtrigger.Delete,
            condition=pgtrigger.Condition(
                f"((OLD.batch_id IS NOT NULL OR OLD.has_dependants) AND NOT ({_ENDED}))"
            ),
            func=_DROPPED,
        ),
    ]


class Batch(models.Model):
    """Jobs enqueued together with one callback when every one of them has ended.

    ``total`` children joined it; ``pending`` have not ended yet; ``done``, ``dead`` and
    ``cancelled`` count how the others ended (a child an operator retries before the callback
    counts again when it ends again). ``sealed`` once the block that opened it has ended: the
    callback waits for it. ``retried_after`` counts children retried after the callback.
    """

    id = models.BigAutoField(primary_key=True)
    label = models.CharField(max_length=200, blank=True, default="")
    state = models.CharField(max_length=16, choices=BatchState.choices, default=BatchState.OPEN)
    sealed = models.BooleanField(default=False)
    total = models.PositiveIntegerField(default=0)
    pending = models.IntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    dead = models.PositiveIntegerField(default=0)
    cancelled = models.PositiveIntegerField(default=0)
    retried_after = models.PositiveIntegerField(default=0)
    on_complete = models.CharField(max_length=200, blank=True, default="")
    on_complete_job_id = models.BigIntegerField(null=True, blank=True)
    on_failure = models.CharField(max_length=200, blank=True, default="")
    on_failure_job_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()
    #: When the first child ended dead or cancelled (``on_failure`` released then).
    failed_at = models.DateTimeField(null=True, blank=True)
    #: When the last child ended (``on_complete`` released then).
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "litejobs_batch"
        ordering = ["-id"]
        verbose_name_plural = "batches"
        indexes = [
            models.Index(
                fields=["completed_at"],
                name="litejobs_batch_completed",
                condition=Q(state=BatchState.COMPLETED),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=BatchState.values), name="litejobs_batch_state_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"batch #{self.id} ({self.state}, {self.pending} of {self.total} left)"


class JobDependency(models.Model):
    """One job (``job_id``) waiting on another (``upstream_id``) to end.

    ``upstream_state`` is how the upstream job ended (``missing`` when no such job existed at
    enqueue), ``succeeded`` whether that counts as success for the waiting job (``done``, or
    skipped), ``resolved_at`` when it was learnt. ``policy`` and ``run_at`` are the waiting
    job's own: what it does when an upstream did not succeed, and when it asked to run.
    """

    id = models.BigAutoField(primary_key=True)
    job_id = models.BigIntegerField()
    upstream_id = models.BigIntegerField()
    policy = models.CharField(
        max_length=8, choices=UpstreamPolicy.choices, default=UpstreamPolicy.CANCEL
    )
    run_at = models.DateTimeField()
    upstream_state = models.CharField(max_length=16, blank=True, db_default="")
    succeeded = models.BooleanField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "litejobs_jobdependency"
        ordering = ["job_id", "upstream_id"]
        verbose_name_plural = "job dependencies"
        indexes = [
            models.Index(fields=["job_id"], name="litejobs_dependency_job"),
            models.Index(
                fields=["upstream_id"],
                name="litejobs_dependency_waiting",
                condition=Q(resolved_at__isnull=True),
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["job_id", "upstream_id"], name="litejobs_dependency_once"
            ),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} waits on job {self.upstream_id}"


__all__ = [
    "UPSTREAM_FAILED",
    "UPSTREAM_SKIPPED",
    "WAITING_FOR_OTHERS",
    "Batch",
    "JobDependency",
    "member_triggers",
]
