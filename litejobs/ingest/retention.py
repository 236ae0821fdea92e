"""Purging what ingest pipelines keep past ``INGEST_RETENTION``: set-aside records, finished
file imports (with their error reports) and overflow events, in bounded batches. The daily
housekeeping runs it; the hourly counts are small and kept for good."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..sql.cursors import hot_cursor, run_query

__all__ = ["purge"]

logger = logging.getLogger(__name__)


#: What is purged (the name of its statement), by the name its count is answered under.
PURGED = {
    "set_aside": "ingest_purge_set_aside",
    "imports": "ingest_purge_imports",
    "overflow_events": "ingest_purge_overflow_events",
}


def purge(
    *, now: datetime | None = None, should_stop: Callable[[], bool] | None = None
) -> dict[str, int]:
    """Delete what is older than ``INGEST_RETENTION``, ``PURGE_BATCH`` rows per statement;
    answers the counts by name. Stops between batches once ``should_stop()``."""
    before = (now or clock.now()) - settings.duration("INGEST_RETENTION")
    limit = settings.count("PURGE_BATCH")
    alias = settings.DATABASE
    counts = {}
    for what, statement in PURGED.items():
        deleted = 0
        while not (should_stop and should_stop()):
            with transaction.atomic(using=alias), hot_cursor(connections[alias]) as cursor:
                run_query(cursor, statement, {"before": before, "limit": limit})
                batch: int = cursor.rowcount
            deleted += batch
            if batch < limit:
                break
        counts[what] = deleted
    logger.info("ingest purged %s", " ".join(f"{what}={n}" for what, n in counts.items()))
    return counts
