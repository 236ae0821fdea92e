"""The operator action log: one row per change an operator made (jobs, queues, schedules,
imports, report runs and limits, webhook endpoints).

Written by ``litejobs.jobs.actionlog`` in the transaction of the change itself, so a row
exists exactly when the change committed. Nothing edits or deletes a row afterwards: triggers
refuse it, and the admin shows the log read-only. It is the record of who did what, to what,
and why.
"""

from __future__ import annotations

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from ..core import times
from ..core.enums import OperatorVerb
from .people import person
from .trails import append_only

__all__ = ["OperatorAction"]


class OperatorAction(models.Model):
    """Who (``by``, ``user``) did what (``verb``) to which jobs or other record (``job_ids`` or
    ``filter``), what it changed (``change``), how many it affected, when and why."""

    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField()
    by = models.CharField(max_length=150)
    user = person()
    verb = models.CharField(max_length=20, choices=OperatorVerb.choices)
    job_ids = models.JSONField(
        default=list, blank=True, help_text="The jobs the action changed (a bulk action's too)."
    )
    filter = models.JSONField(
        default=dict,
        blank=True,
        encoder=DjangoJSONEncoder,
        help_text="What a bulk action matched (state, name, queue, tenant, ids, limit), or what "
        "the action named: the queue, schedule, occurrence, pipeline, import, report run, report "
        "or webhook endpoint.",
    )
    change = models.JSONField(
        default=dict,
        blank=True,
        encoder=DjangoJSONEncoder,
        help_text="What a setting change changed: each field's old and new value.",
    )
    affected = models.PositiveIntegerField(default=0)
    reason = models.TextField(blank=True, default="")

    class Meta:
        db_table = "litejobs_operatoraction"
        ordering = ["-at", "-id"]
        verbose_name = "operator action"
        indexes = [models.Index(fields=["-at"], name="litejobs_operatoraction_at")]
        triggers = append_only("litejobs_operatoraction", "operator actions")

    def __str__(self) -> str:
        return f"{self.get_verb_display()} by {self.by} at {times.when(self.at)}"
