"""The operator action log: one row per change an operator made to jobs or queues.

Written by ``litejobs.jobs.actionlog`` in the transaction of the change itself, so a row
exists exactly when the change committed. Nothing edits or deletes a row afterwards (the
admin shows the log read-only): it is the record of who did what, to what, and why.
"""

from __future__ import annotations

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from ..core.enums import OperatorVerb
from .people import person

__all__ = ["OperatorAction"]


class OperatorAction(models.Model):
    """Who (``by``, ``user``) did what (``verb``) to which jobs or queue (``job_ids`` or
    ``filter``), how many it affected, when and why."""

    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField()
    by = models.CharField(max_length=150)
    user = person()
    verb = models.CharField(max_length=20, choices=OperatorVerb.choices)
    job_ids = models.JSONField(
        default=list, blank=True, help_text="The jobs a single action named (empty for a bulk)."
    )
    filter = models.JSONField(
        default=dict,
        blank=True,
        encoder=DjangoJSONEncoder,
        help_text="What a bulk action matched (state, name, queue, tenant, ids, limit), or the "
        "queue a pause or resume switched.",
    )
    affected = models.PositiveIntegerField(default=0)
    reason = models.TextField(blank=True, default="")

    class Meta:
        db_table = "litejobs_operatoraction"
        ordering = ["-at", "-id"]
        verbose_name = "operator action"
        indexes = [models.Index(fields=["-at"], name="litejobs_operatoraction_at")]

    def __str__(self) -> str:
        return f"{self.get_verb_display()} by {self.by} at {self.at:%Y-%m-%d %H:%M:%S}"
