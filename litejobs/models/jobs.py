"""The queue's records: jobs, their failed attempts, workers and queue switches."""

from typing import Any

import pgtrigger
from django.db import models
from django.db.models import Q

from ..core.enums import (
    CLAIMABLE,
    LIVE,
    TERMINAL,
    UNCLAIMABLE,
    AttemptOutcome,
    JobState,
    sql_list,
)
from .batches import member_triggers
from .hooks import settle_triggers
from .triggers import after_update, fence_never_decreases, notify_per_statement, refuse

NOTIFY_CHANNEL = "litejobs_jobs"
_FINISHED = Q(state__in=TERMINAL)


class JsonGinIndex(models.Index):
    """A GIN index (for ``@>`` on a JSON column) without requiring ``django.contrib.postgres``
    in the project's INSTALLED_APPS."""

    suffix = "gin"

    def create_sql(self, model: Any, schema_editor: Any, using: str = "", **kwargs: Any) -> Any:
        """``CREATE INDEX ... USING gin``."""
        return super().create_sql(model, schema_editor, using=" USING gin", **kwargs)


_NOTIFY = f"""
    PERFORM pg_notify('{NOTIFY_CHANNEL}', NEW.queue || ' ' || extract(epoch FROM NEW.run_at)::text);
    RETURN NULL;
"""
# After an INSERT statement: one notification per queue with the earliest due instant.
_NOTIFY_INSERTED = f"""
    PERFORM pg_notify('{NOTIFY_CHANNEL}', queue || ' ' || extract(epoch FROM due)::text)
    FROM (
        SELECT queue, min(run_at) AS due FROM inserted
        WHERE state IN ({sql_list(CLAIMABLE)}) GROUP BY queue
    ) AS due_by_queue;
    RETURN NULL;
"""
# A job that runs a scheduled occurrence moved: the occurrence follows it, in the same statement
# as the job's fenced transition (so every occurrence completion is fenced by construction).
# Only the occurrence's current job (last_job_id) moves it, and never to a lower fence. A
# cancelled job leaves its occurrence `skipped` when it never started, else `cancelled`.
#: The job that pays one item of a bulk money action (declared in ``litejobs.bulk``).
BULK_ITEM_JOB = "litejobs.bulk_item"

# A bulk item's job that ends cancelled or dead before the item recorded its outcome (an
# operator cancelled it, or its attempt was abandoned past its timeout) leaves the item failed,
# so its bulk action's own retry can pay it; its transaction, if any, rolled back.
_BULK_ITEM_FOLLOWS_JOB = """
    UPDATE litejobs_bulkactionitem SET
        state = 'failed',
        error_code = CASE WHEN NEW.state = 'cancelled' THEN 'bulk-item-cancelled'
                          ELSE 'bulk-item-job-dead' END,
        error = 'Its job #' || NEW.id || CASE
            WHEN NEW.state = 'cancelled' THEN ' was cancelled before the item was paid'
            ELSE ' ended dead without recording the item (' || NEW.error_class || ')' END
            || ': nothing moved. Retry the item from its bulk action to pay it.',
        updated_at = COALESCE(NEW.finished_at, statement_timestamp()),
        finished_at = COALESCE(NEW.finished_at, statement_timestamp())
    WHERE job_id = NEW.id AND state IN ('pending', 'retrying');
    RETURN NULL;
"""

_OCCURRENCE_FOLLOWS_JOB = f"""
    UPDATE litejobs_occurrence AS occurrence SET
        state = CASE
            WHEN NEW.state = 'running' THEN 'processing'
            WHEN NEW.state = 'done' THEN 'completed'
            WHEN NEW.state = 'dead' THEN 'dead_letter'
            WHEN NEW.state = 'cancelled'
                 AND occurrence.attempts + NEW.attempts - OLD.attempts > 0 THEN 'cancelled'
            WHEN NEW.state = 'cancelled' THEN 'skipped'
            ELSE 'scheduled'
        END,
        attempts = GREATEST(occurrence.attempts + NEW.attempts - OLD.attempts, 0),
        run_at = NEW.run_at,
        started_at = CASE WHEN NEW.state = 'running' THEN NEW.started_at
                          ELSE occurrence.started_at END,
        completed_at = CASE WHEN NEW.state = 'done' THEN NEW.finished_at
                            ELSE occurrence.completed_at END,
        finished_at = CASE WHEN NEW.state IN ({sql_list(TERMINAL)}) THEN NEW.finished_at END,
        lease_owner = CASE WHEN NEW.state = 'running' THEN NEW.lease_owner
                           ELSE occurrence.lease_owner END,
        lease_expires_at = CASE WHEN NEW.state = 'running' THEN NEW.lease_expires_at END,
        fence = GREATEST(occurrence.fence, NEW.fence),
        error_class = CASE WHEN NEW.state IN ('failed', 'dead') THEN NEW.error_class
                           WHEN NEW.state = 'done' THEN '' ELSE occurrence.error_class END,
        error_message = CASE WHEN NEW.state IN ('failed', 'dead') THEN left(NEW.error_message, 2000)
                             WHEN NEW.state = 'done' THEN '' ELSE occurrence.error_message END,
        note = CASE WHEN NEW.state = 'cancelled' THEN 'Its job ' || NEW.id || ' was cancelled.'
                    ELSE occurrence.note END
    WHERE occurrence.id = NEW.occurrence_id AND occurrence.last_job_id = NEW.id
      AND occurrence.fence <= NEW.fence;
    IF NEW.state = 'done' AND OLD.state <> 'done' THEN
        UPDATE litejobs_schedule AS schedule
        SET last_success_at = NEW.finished_at, last_success_for = occurrence.scheduled_for
        FROM litejobs_occurrence AS occurrence
        WHERE occurrence.id = NEW.occurrence_id AND occurrence.last_job_id = NEW.id
          AND schedule.id = occurrence.schedule_id
          AND (schedule.last_success_at IS NULL OR schedule.last_success_at <= NEW.finished_at);
    END IF;
    RETURN NULL;
"""
# A concurrency-limited run ended: its slot is free for a job waiting on the same key. The
# payload names no instant (due now, whatever the listening host's clock says).
_NOTIFY_NOW = f"""
    PERFORM pg_notify('{NOTIFY_CHANNEL}', NEW.queue);
    RETURN NULL;
"""


class Job(models.Model):
    """One unit of background work: a declared job's name, its JSON payload and its state."""

    id = models.BigAutoField(primary_key=True)
    name = models.CharField(max_length=200)
    queue = models.CharField(max_length=100, db_default="default")
    key = models.CharField(max_length=300, help_text="Idempotency key, unique while live.")
    tenant = models.CharField(max_length=200, blank=True, db_default="")
    payload = models.JSONField(db_default={})
    state = models.CharField(max_length=16, choices=JobState.choices, db_default=JobState.READY)
    priority = models.SmallIntegerField(db_default=0, help_text="-100..100, higher runs first.")
    run_at = models.DateTimeField()
    attempts = models.PositiveIntegerField(db_default=0, help_text="Attempts started so far.")
    max_attempts = models.PositiveIntegerField(db_default=1)
    fence = models.BigIntegerField(db_default=0, help_text="Fencing value of the latest claim.")
    lease_owner = models.CharField(max_length=64, blank=True, db_default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(db_default=False)
    # NULL (not "") means "no limit": the claim's partial index filters on IS NULL.
    concurrency_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    concurrency_limit = models.PositiveIntegerField(null=True, blank=True)
    # A rate (litejobs.Rate, or its queue's): the bucket its starts are counted in, and the
    # limit and window of that bucket. NULL means no rate (the plain claim takes the job).
    rate_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    rate_limit = models.PositiveIntegerField(null=True, blank=True)
    rate_per = models.DurationField(null=True, blank=True)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    error_class = models.CharField(max_length=300, blank=True, db_default="")
    error_message = models.TextField(blank=True, db_default="")
    error_traceback = models.TextField(blank=True, db_default="")
    progress = models.JSONField(null=True, blank=True)
    traceparent = models.CharField(max_length=64, blank=True, db_default="")
    version = models.PositiveSmallIntegerField(
        db_default=1, help_text="The payload's schema version (its declaration's, at enqueue)."
    )
    module = models.CharField(
        max_length=200,
        blank=True,
        db_default="",
        help_text="The module that declares the job: a worker that does not know its name "
        "imports it, when it lies inside an installed app.",
    )
    handed_back_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a worker first handed it back because its code could not run it (an "
        "unknown name, or a newer payload version); dead once UNKNOWN_JOB_GRACE passes.",
    )
    settle_hook = models.BooleanField(
        db_default=False,
        help_text="Its declaration has a settle hook: its ending writes the hook's call.",
    )
    # The scheduled occurrence this job runs, if any. No database constraint: the job hot path
    # pays nothing for it, and occurrences are purged by their own retention (a purged
    # occurrence leaves its finished jobs a dangling id the trigger ignores).
    occurrence = models.ForeignKey(
        "litejobs.Occurrence",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="jobs",
    )
    # A batch's child (litejobs.batches), and a job others wait on: NULL and false outside
    # them, so the triggers settling batches and dependants skip every other job.
    batch_id = models.BigIntegerField(null=True, blank=True)
    has_dependants = models.BooleanField(db_default=False)

    class Meta:
        db_table = "litejobs_job"
        ordering = ["-id"]
        # The Prometheus endpoint's (litejobs.metrics.views): every queue's backlog, every
        # schedule, endpoint and pipeline, so a grant of its own, not the admin's staff flag.
        permissions = [("view_metrics", "Can read the litejobs metrics")]
        indexes = [
            models.Index(
                models.F("priority").desc(),
                "run_at",
                "id",
                name="litejobs_job_claimable",
                condition=~Q(state__in=UNCLAIMABLE)
                & Q(concurrency_key__isnull=True, rate_key__isnull=True),
            ),
            models.Index(
                fields=["concurrency_key"],
                name="litejobs_job_limited",
                condition=Q(
                    state__in=(*CLAIMABLE, JobState.RUNNING), concurrency_key__isnull=False
                ),
            ),
            # Jobs with a rate and no concurrency limit, in the limited claim's order per rate
            # key: it walks from key to key and reads a claim's worth of each.
            models.Index(
                "rate_key",
                models.F("priority").desc(),
                "run_at",
                "id",
                name="litejobs_job_rated",
                condition=Q(state__in=CLAIMABLE, rate_key__isnull=False)
                & Q(concurrency_key__isnull=True),
            ),
            models.Index(
                fields=["lease_expires_at"],
                name="litejobs_job_leases",
                condition=Q(state=JobState.RUNNING),
            ),
            models.Index(
                fields=["finished_at"],
                name="litejobs_job_finished",
                condition=Q(state__in=TERMINAL),
            ),
            # Dead jobs stay for RETENTION["dead"]: counted per queue and by doctor without
            # reading the done rows beside them.
            models.Index(
                fields=["finished_at"],
                name="litejobs_job_dead",
                condition=Q(state=JobState.DEAD),
            ),
            models.Index(
                fields=["occurrence"],
                name="litejobs_job_occurrence",
                condition=Q(occurrence__isnull=False),
            ),
            # The admin listing's filters (see ``admin.jobfilters``): finished jobs only, so
            # a job enters them once, when it finishes; the claim never writes to them.
            # Live jobs are found through ``litejobs_job_live_key``.
            models.Index(
                fields=["tenant", "id"],
                name="litejobs_job_done_tenant",
                condition=Q(state__in=TERMINAL) & ~Q(tenant=""),
            ),
            models.Index(fields=["key"], name="litejobs_job_done_key", condition=_FINISHED),
            models.Index(
                fields=["created_at"], name="litejobs_job_done_created", condition=_FINISHED
            ),
            models.Index(fields=["name", "id"], name="litejobs_job_done_name", condition=_FINISHED),
            models.Index(
                fields=["queue", "id"], name="litejobs_job_done_queue", condition=_FINISHED
            ),
            models.Index(
                fields=["batch_id", "state"],
                name="litejobs_job_batch",
                condition=Q(batch_id__isnull=False),
            ),
            JsonGinIndex(
                fields=["payload"],
                opclasses=["jsonb_path_ops"],
                name="litejobs_job_done_payload",
                condition=_FINISHED,
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["name", "tenant", "key"],
                condition=Q(state__in=LIVE),
                name="litejobs_job_live_key",
                violation_error_message="A live job already holds this idempotency key.",
            ),
            models.CheckConstraint(
                condition=Q(state__in=JobState.values), name="litejobs_job_state_valid"
            ),
            models.CheckConstraint(
                condition=Q(priority__gte=-100, priority__lte=100),
                name="litejobs_job_priority_range",
            ),
            models.CheckConstraint(
                condition=~Q(state=JobState.RUNNING) | Q(lease_expires_at__isnull=False),
                name="litejobs_job_running_has_lease",
            ),
            models.CheckConstraint(condition=~Q(key=""), name="litejobs_job_key_not_empty"),
        ]
        triggers = [
            fence_never_decreases("litejobs_fence_never_decreases", "job"),
            refuse(
                "litejobs_terminal_only_retry",
                pgtrigger.Update,
                "litejobs: job % is % and changes only through retry",
                "OLD.id",
                "OLD.state",
                condition=f"OLD.state IN ({sql_list(TERMINAL)}) "
                "AND NEW.state NOT IN ('ready', 'scheduled')",
            ),
            # One NOTIFY per queue per INSERT statement (enqueue_many inserts 1,000 rows).
            notify_per_statement(
                "litejobs_notify_inserted", pgtrigger.Insert, _NOTIFY_INSERTED, new="inserted"
            ),
            after_update(
                "litejobs_notify_requeued",
                f"NEW.state IN ({sql_list(CLAIMABLE)}) AND (OLD.state IS DISTINCT FROM "
                "NEW.state OR OLD.run_at IS DISTINCT FROM NEW.run_at)",
                _NOTIFY,
            ),
            after_update(
                "litejobs_notify_slot_freed",
                "OLD.state = 'running' AND NEW.state <> 'running' "
                "AND NEW.concurrency_key IS NOT NULL",
                _NOTIFY_NOW,
            ),
            after_update(
                "litejobs_bulk_item_follows_job",
                f"NEW.name = '{BULK_ITEM_JOB}' AND NEW.state IN ('cancelled', 'dead') "
                "AND OLD.state IS DISTINCT FROM NEW.state",
                _BULK_ITEM_FOLLOWS_JOB,
            ),
            after_update(
                "litejobs_occurrence_follows_job",
                "NEW.occurrence_id IS NOT NULL AND (OLD.state IS DISTINCT FROM NEW.state "
                "OR OLD.lease_expires_at IS DISTINCT FROM NEW.lease_expires_at "
                "OR OLD.run_at IS DISTINCT FROM NEW.run_at)",
                _OCCURRENCE_FOLLOWS_JOB,
            ),
            *member_triggers(),
            *settle_triggers(),
        ]

    def __str__(self) -> str:
        return f"{self.name} #{self.id} ({self.state})"


class JobAttempt(models.Model):
    """An attempt that did not succeed: why, when and on which worker (the dead row's history)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="failed_attempts")
    number = models.PositiveIntegerField()
    worker = models.CharField(max_length=64, blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField()
    outcome = models.CharField(max_length=16, choices=AttemptOutcome.choices)
    error_class = models.CharField(max_length=300, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    error_traceback = models.TextField(blank=True, default="")

    class Meta:
        db_table = "litejobs_jobattempt"
        ordering = ["job_id", "number"]

    def __str__(self) -> str:
        return f"attempt {self.number} of job {self.job_id}: {self.outcome}"


class Worker(models.Model):
    """A running ``runworker`` process; gone once its lease lapses without a heartbeat."""

    id = models.CharField(primary_key=True, max_length=64)
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    queues = models.JSONField(default=list, help_text="Empty: every queue.")
    concurrency = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    last_heartbeat = models.DateTimeField()
    lease_expires_at = models.DateTimeField()
    in_flight = models.JSONField(default=list)
    stopping = models.BooleanField(default=False)

    class Meta:
        db_table = "litejobs_worker"
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}"


class QueueState(models.Model):
    """An operator's switch on a queue: a paused queue's jobs wait until it is resumed."""

    name = models.CharField(primary_key=True, max_length=100)
    paused = models.BooleanField(default=False)
    reason = models.TextField(blank=True, default="")
    changed_by = models.CharField(max_length=150, blank=True, default="")
    changed_at = models.DateTimeField()

    class Meta:
        db_table = "litejobs_queuestate"
        ordering = ["name"]
        # The admin's sidebar names the page it opens: the queues overview, titled "Queues".
        verbose_name_plural = "queues"

    def __str__(self) -> str:
        return f"{self.name} ({'paused' if self.paused else 'running'})"
