"""Purging lock rows no block held for a day, in bounded batches (the daily housekeeping).

A released or lapsed key keeps its row until then, so the operators see who held it last; a
purged key's next holder still gets a greater token (every token comes from one sequence)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..sql.cursors import hot_cursor, run_query

__all__ = ["KEPT_FOR", "purge"]

logger = logging.getLogger(__name__)

#: How long a key no block holds keeps its row.
KEPT_FOR = timedelta(days=1)


def purge(*, should_stop: Callable[[], bool] | None = None) -> dict[str, int]:
    """Delete the rows of keys no block held for ``KEPT_FOR``, ``PURGE_BATCH`` per statement;
    answers the count. Stops between batches once ``should_stop()``."""
    alias = settings.DATABASE
    before = clock.database_now(alias) - KEPT_FOR
    limit = settings.count("PURGE_BATCH")
    deleted = 0
    while not (should_stop and should_stop()):
        with transaction.atomic(using=alias), hot_cursor(connections[alias]) as cursor:
            run_query(cursor, "lock_purge", {"before": before, "limit": limit})
            batch: int = cursor.rowcount
        deleted += batch
        if batch < limit:
            break
    logger.info("locks purged %s", deleted)
    return {"locks": deleted}
