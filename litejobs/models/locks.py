"""Fenced locks (``litejobs.lock``): one row per key that a process held at some time.

A row is held while ``expires_at`` is ahead of the database's clock and it was not released;
its holder renews it while the block runs. A release or a lapse leaves the row in place, so
the next holder of the key takes it over under a new ``token``, drawn from the
``litejobs_lock_token`` sequence while the row is locked: every holder's token is greater than
any earlier holder's. Rows no block held for a day are purged by the daily
housekeeping.
"""

from __future__ import annotations

import pgtrigger
from django.db import models
from django.db.models import Q

from .triggers import refuse

__all__ = ["Lock", "LockCounter"]


class Lock(models.Model):
    """Who holds (or last held) a lock key, under which token, and until when."""

    key = models.CharField(primary_key=True, max_length=200)
    token = models.BigIntegerField(help_text="Rises with every new holder of any key.")
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    acquired_at = models.DateTimeField()
    renewed_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    released_at = models.DateTimeField(null=True, blank=True)
    contended = models.BooleanField(
        default=False, help_text="Another block asked for the key while it was held."
    )

    class Meta:
        db_table = "litejobs_lock"
        constraints = [
            models.CheckConstraint(condition=~Q(key=""), name="litejobs_lock_key_not_empty"),
        ]
        triggers = [
            refuse(
                "litejobs_lock_token_never_decreases",
                pgtrigger.Update,
                "litejobs: the token of lock % cannot decrease (% -> %)",
                "OLD.key",
                "OLD.token",
                "NEW.token",
                condition="NEW.token < OLD.token",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} (token {self.token})"


class LockCounter(models.Model):
    """A count kept for good about locks: ``lost``, the blocks that ended without their lock."""

    name = models.CharField(primary_key=True, max_length=32)
    count = models.BigIntegerField(default=0)

    class Meta:
        db_table = "litejobs_lockcounter"

    def __str__(self) -> str:
        return f"{self.name}: {self.count}"
