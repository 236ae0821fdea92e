"""Leader leases: one row per role that exactly one process may play at a time.

``runscheduler`` replicas compete for the ``scheduler`` row (the leader plans occurrences);
relays compete for the ``relay`` row (the leader publishes the outbox). A lease's fence comes
from the ``litejobs_fence`` sequence and changes with every change of leader, so work written
under it can always tell which leader wrote it.
"""

from django.db import models

from ..core.enums import LeaderRole

__all__ = ["LeaderLease", "LeaderRole"]


class LeaderLease(models.Model):
    """Who plays a role right now, since when, and until when unless renewed."""

    name = models.CharField(primary_key=True, max_length=32, choices=LeaderRole.choices)
    owner = models.CharField(max_length=64)
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    fence = models.BigIntegerField(help_text="Rises with every change of leader.")
    acquired_at = models.DateTimeField()
    renewed_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        db_table = "litejobs_leaderlease"

    def __str__(self) -> str:
        return f"{self.name}: {self.host}:{self.pid}"

    @classmethod
    def of(cls, role: LeaderRole, using: str) -> "LeaderLease | None":
        """The role's lease row, if any process ever played it."""
        return cls.objects.using(using).filter(name=role).first()
