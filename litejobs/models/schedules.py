"""The scheduler's records: schedules, their occurrences and manual replays.

A ``Schedule`` row is a declaration's snapshot (refreshed by every ``runscheduler`` sync) plus
operator state (enabled or disabled, why, by whom) that a sync never overwrites. An
``Occurrence`` is one firing: its identity is (schedule, scheduled instant), unique in
PostgreSQL, so two schedulers can never create one twice. Its state follows the job that runs
it, copied by a trigger on ``litejobs_job`` in the same statement as the job's fenced
transition — so every occurrence completion is fenced by construction.
"""

from django.db import models
from django.db.models import Q

from ..core import times
from ..core.enums import OCCURRENCE_FINISHED, OccurrenceState, ScheduleStatus
from .triggers import fence_never_decreases

__all__ = [
    "OCCURRENCE_FINISHED",
    "Occurrence",
    "OccurrenceReplay",
    "OccurrenceState",
    "Schedule",
    "ScheduleStatus",
]


class Schedule(models.Model):
    """A declared schedule as the database knows it: the declaration and the operator's switch."""

    name = models.CharField(max_length=100, unique=True)
    job_name = models.CharField(max_length=200)
    args = models.JSONField(default=dict, blank=True)
    cron = models.CharField(max_length=200, blank=True, default="")
    every = models.DurationField(null=True, blank=True)
    timezone = models.CharField(max_length=64, default="UTC")
    local_time_reason = models.TextField(blank=True, default="")
    dst_skipped = models.CharField(max_length=8, blank=True, default="")
    dst_repeated = models.CharField(max_length=8, blank=True, default="")
    jitter = models.DurationField()
    overlap = models.CharField(max_length=8)
    misfire = models.CharField(max_length=10)
    max_catchup = models.PositiveIntegerField()
    retry = models.JSONField(default=dict, help_text="The retry policy occurrences run with.")
    timeout = models.DurationField(
        help_text="Per-attempt timeout (the lease is renewed while it runs)."
    )
    grace = models.DurationField(help_text="How late a success may be before it is overdue.")
    retention = models.DurationField(help_text="Finished occurrences older than this are purged.")
    operating_owner = models.CharField(max_length=200)
    record_owner = models.CharField(max_length=200)
    status = models.CharField(max_length=8, choices=ScheduleStatus.choices)
    decider = models.CharField(max_length=200, blank=True, default="")
    decide_by = models.DateField(null=True, blank=True)
    declared = models.BooleanField(
        default=True, help_text="Whether the code the last sync ran declares it."
    )
    synced_at = models.DateTimeField()
    # Operator state: a sync never writes these.
    enabled = models.BooleanField(default=True)
    state_reason = models.TextField(blank=True, default="")
    state_changed_by = models.CharField(max_length=150, blank=True, default="")
    state_changed_at = models.DateTimeField(null=True, blank=True)
    active_since = models.DateTimeField(
        help_text="First sync, or the last enable: instants before it are never run."
    )
    # Runtime state, written by the leader and by the job trigger.
    planned_through = models.DateTimeField(
        null=True, blank=True, help_text="The latest instant planned (run or skipped)."
    )
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_success_for = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "litejobs_schedule"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(cron="") & Q(every__isnull=False))
                | (~Q(cron="") & Q(every__isnull=True)),
                name="litejobs_schedule_cron_or_every",
            ),
            models.CheckConstraint(
                condition=Q(status__in=ScheduleStatus.values), name="litejobs_schedule_status"
            ),
            models.CheckConstraint(
                condition=Q(overlap__in=("forbid", "allow")), name="litejobs_schedule_overlap"
            ),
            models.CheckConstraint(
                condition=Q(misfire__in=("skip", "run_once", "run_all")),
                name="litejobs_schedule_misfire",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Occurrence(models.Model):
    """One firing of a schedule: identity (schedule, scheduled_for), state, times, lease, fence."""

    id = models.BigAutoField(primary_key=True)
    # The unique (schedule, scheduled_for) index serves lookups by schedule.
    schedule = models.ForeignKey(
        Schedule, on_delete=models.PROTECT, related_name="occurrences", db_index=False
    )
    scheduled_for = models.DateTimeField(help_text="The nominal instant: the identity.")
    run_at = models.DateTimeField(help_text="When its job is (was) due: instant + jitter.")
    state = models.CharField(
        max_length=12, choices=OccurrenceState.choices, default=OccurrenceState.SCHEDULED
    )
    attempts = models.PositiveIntegerField(default=0, help_text="Attempts started, all replays.")
    replays = models.PositiveIntegerField(default=0)
    last_job_id = models.BigIntegerField(
        null=True, blank=True, help_text="The job that runs (ran) it last."
    )
    created_at = models.DateTimeField()
    last_scheduled_at = models.DateTimeField(
        null=True, blank=True, help_text="When its latest job was enqueued (planned or replayed)."
    )
    started_at = models.DateTimeField(null=True, blank=True, help_text="Latest attempt's start.")
    completed_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(max_length=64, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    fence = models.BigIntegerField(default=0, help_text="Fencing value of the latest claim.")
    tenant = models.CharField(max_length=200, blank=True, default="")
    error_class = models.CharField(max_length=300, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    note = models.TextField(blank=True, default="", help_text="Why it was skipped, and so on.")

    class Meta:
        db_table = "litejobs_occurrence"
        ordering = ["-scheduled_for"]
        constraints = [
            models.UniqueConstraint(
                fields=["schedule", "scheduled_for"],
                name="litejobs_occurrence_identity",
                violation_error_message="This schedule already has an occurrence at this instant.",
            ),
            models.CheckConstraint(
                condition=Q(state__in=OccurrenceState.values), name="litejobs_occurrence_state"
            ),
        ]
        indexes = [
            models.Index(
                fields=["schedule", "state"],
                name="litejobs_occurrence_live",
                condition=Q(state__in=(OccurrenceState.SCHEDULED, OccurrenceState.PROCESSING)),
            ),
        ]
        triggers = [
            fence_never_decreases("litejobs_occurrence_fence_never_decreases", "occurrence"),
        ]

    def __str__(self) -> str:
        return f"{self.schedule_id} @ {times.when(self.scheduled_for)} ({self.state})"


class OccurrenceReplay(models.Model):
    """The audit record of a manual replay: who asked, when, why, and the job it started."""

    occurrence = models.ForeignKey(Occurrence, on_delete=models.CASCADE, related_name="replay_log")
    requested_by = models.CharField(max_length=150)
    requested_at = models.DateTimeField()
    reason = models.TextField()
    job_id = models.BigIntegerField(help_text="The job the replay enqueued.")
    previous_state = models.CharField(max_length=12, choices=OccurrenceState.choices)

    class Meta:
        db_table = "litejobs_occurrencereplay"
        ordering = ["occurrence_id", "requested_at"]

    def __str__(self) -> str:
        return f"replay of occurrence {self.occurrence_id} by {self.requested_by}"
