"""Schedules' retention: finished occurrences older than their schedule's ``retention`` are
purged, with their replay audit, by litejobs' housekeeping."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..models import Schedule
from ..sql.cursors import run_query

logger = logging.getLogger(__name__)


def purge_occurrences(
    *, now: datetime | None = None, should_stop: Callable[[], bool] | None = None
) -> dict[str, int]:
    """Delete finished occurrences older than their schedule's retention, with their replay
    audit; answers the count per schedule. ``PURGE_BATCH`` rows per statement, each its own
    transaction; scheduled and processing occurrences are never purged."""
    now = now or clock.now()
    alias = settings.DATABASE
    limit = int(settings.PURGE_BATCH)
    counts: dict[str, int] = {}
    for row in Schedule.objects.using(alias).order_by("name"):
        deleted = 0
        while not (should_stop and should_stop()):
            with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
                run_query(
                    cursor,
                    "occurrence_purge",
                    {"schedule_id": row.pk, "before": now - row.retention, "limit": limit},
                )
                batch = cursor.rowcount
            deleted += batch
            if batch < limit:
                break
        if deleted:
            counts[row.name] = deleted
    logger.info("occurrences purged %s", " ".join(f"{n}={c}" for n, c in counts.items()) or "none")
    return counts
