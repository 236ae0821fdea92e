"""Schedules' metric families (``Feature.metrics``; the metrics add-on serves them):

- ``litejobs_schedule_last_success_timestamp_seconds{schedule}``: when its latest successful
  occurrence completed (absent until one has) — alert on ``time() - ...``;
- ``litejobs_schedule_overdue{schedule}``: 1 when no occurrence completed within its period
  plus grace (the admin's flag, ``doctor``'s ``overdue-schedule``);
- ``litejobs_schedule_enabled{schedule}``: 0 while an operator has it disabled;
- ``litejobs_occurrences{schedule,state}``: occurrences kept, per state.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from ..conf import settings
from ..core.features import Family, gauges
from ..models import Occurrence
from . import health


def families(now: datetime) -> Iterator[Family]:
    """Last success, overdue flag, switch and occurrence counts per schedule."""
    last_success, overdue, enabled = gauges(
        ("schedule",),
        (
            "litejobs_schedule_last_success_timestamp_seconds",
            "Unix time the schedule's latest successful occurrence completed.",
        ),
        (
            "litejobs_schedule_overdue",
            "1 when no occurrence completed within the schedule's period plus grace.",
        ),
        ("litejobs_schedule_enabled", "0 while an operator has the schedule disabled."),
    )
    for state in health.all_health(now):
        row = state.row
        if row.last_success_at is not None:
            last_success.add([row.name], row.last_success_at.timestamp())
        overdue.add([row.name], 1.0 if state.health.overdue else 0.0)
        enabled.add([row.name], 1.0 if row.enabled else 0.0)
    yield from (last_success, overdue, enabled)
    occurrences = Family(
        "litejobs_occurrences",
        "Occurrences kept (within retention), per schedule and state.",
        ("schedule", "state"),
    )
    occurrences.add_counts(Occurrence.objects.using(settings.DATABASE), "schedule__name", "state")
    yield occurrences
