"""Durable steps of a job run, and the events steps wait for."""

from django.db import models
from django.db.models import Q

from ..core.enums import StepKind, StepState
from .jobs import Job


class JobStep(models.Model):
    """One named step of a job: its stored output is what a replay returns instead of re-running.

    Written in the same transaction as the step's own database writes, and only while the
    writer still holds the job's claim (its fence), so a stale worker can record nothing.
    """

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="steps")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=StepKind.choices, default=StepKind.RUN)
    state = models.CharField(max_length=16, choices=StepState.choices)
    output = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    executions = models.PositiveIntegerField(default=0, help_text="Times its function ran.")
    once = models.BooleanField(default=False)
    fence = models.BigIntegerField(default=0, help_text="Fence of the claim that wrote it.")
    created_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    wake_at = models.DateTimeField(null=True, blank=True, help_text="Sleep end or wait deadline.")
    event = models.CharField(max_length=200, blank=True, default="")
    match = models.JSONField(null=True, blank=True)
    sequence = models.PositiveIntegerField(default=0, help_text="Order of completion.")

    class Meta:
        db_table = "litejobs_jobstep"
        ordering = ["job_id", "sequence", "id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "name"], name="litejobs_jobstep_name"),
        ]
        indexes = [
            models.Index(
                fields=["event"],
                name="litejobs_jobstep_waiting",
                condition=Q(state=StepState.WAITING, kind=StepKind.WAIT),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} of job {self.job_id} ({self.state})"


class Event(models.Model):
    """A published event (``litejobs.publish_event``): it wakes steps waiting for it."""

    id = models.BigAutoField(primary_key=True)
    name = models.CharField(max_length=200)
    payload = models.JSONField(default=dict)
    published_at = models.DateTimeField()

    class Meta:
        db_table = "litejobs_event"
        ordering = ["-id"]
        indexes = [models.Index(fields=["name", "published_at"], name="litejobs_event_name")]

    def __str__(self) -> str:
        return f"{self.name} #{self.id}"
