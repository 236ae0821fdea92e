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

from django.db.models import Count

from ..conf import settings
from ..core.features import Family
from ..models import Occurrence
from . import health


def families(now: datetime) -> Iterator[Family]:
    """Last success, overdue flag, switch and occurrence counts per schedule."""
    last_success = Family(
        "litejobs_schedule_last_success_timestamp_seconds",
        "Unix time the schedule's latest successful occurrence completed.",
        ("schedule",),
    )
    overdue = Family(
        "litejobs_schedule_overdue",
        "1 when no occurrence completed within the schedule's period plus grace.",
        ("schedule",),
    )
    enabled = Family(
        "litejobs_schedule_enabled", "0 while an operator has the schedule disabled.", ("schedule",)
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
    rows = (
        Occurrence.objects.using(settings.DATABASE)
        .order_by()
        .values_list("schedule__name", "state")
        .annotate(n=Count("pk"))
    )
    for name, state, count in rows:
        occurrences.add([name, state], count)
    yield occurrences
