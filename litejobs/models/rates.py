"""Rate buckets: per rate key, the starts the limited claim counted in the current window.

The claim reads and writes a bucket under its lock, in its own transaction: it counts the
starts inside ``(now - per, now]`` on the database's clock, takes at most ``limit`` minus
those, and records the jobs it started as one entry (its instant, how many), dropping the
entries that left the window. Entries less than ``per / 500`` apart are merged at the later
instant: a start is then counted as if it came a little later, which keeps it in the window
a little longer (never shorter), so a bucket holds at most about 500 entries whatever its
limit. Idle buckets are purged by the daily housekeeping.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import models

__all__ = ["RateBucket"]

if TYPE_CHECKING:
    _Field = models.Field[list[datetime], list[datetime]]
    _IntsField = models.Field[list[int], list[int]]
else:
    _Field = _IntsField = models.Field


class Instants(_Field):
    """A PostgreSQL ``timestamptz[]`` (read as a list of aware datetimes). A field of its own
    rather than ``ArrayField``, which would require ``django.contrib.postgres`` installed."""

    description = "Instants"

    def db_type(self, connection: Any) -> str:
        return "timestamptz[]"


class Counts(_IntsField):
    """A PostgreSQL ``integer[]`` (read as a list of ints), for the same reason."""

    description = "Counts"

    def db_type(self, connection: Any) -> str:
        return "integer[]"


class RateBucket(models.Model):
    """One rate key's sliding log of starts."""

    key = models.CharField(primary_key=True, max_length=200)
    limit = models.PositiveIntegerField(help_text="Starts allowed in any window of `per`.")
    per = models.DurationField(help_text="The window's length.")
    starts = Instants(
        default=list,
        help_text="The instants of the starts inside the window as of the last claim, oldest "
        "first (one entry per claim, or per merged claims).",
    )
    counts = Counts(default=list, help_text="How many jobs started at each of those instants.")
    last_start_at = models.DateTimeField(help_text="The latest start (the database's clock).")

    class Meta:
        db_table = "litejobs_rate"
        ordering = ["key"]
        verbose_name = "rate bucket"

    def __str__(self) -> str:
        return f"{self.key} ({self.limit} per {self.per})"
