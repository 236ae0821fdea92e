"""Human work queues' retention: done and cancelled items are purged in batches."""

from __future__ import annotations

import logging
from typing import Any

from django.db import connections

from ..conf import settings
from ..core import clock
from ..core.durations import parse_duration
from ..sql.cursors import run_query

__all__ = ["purge"]

logger = logging.getLogger(__name__)


def purge(*, older_than: Any, batch: int | None = None) -> int:
    """Delete done and cancelled items resolved more than ``older_than`` ago, in batches of
    ``LITEJOBS["PURGE_BATCH"]`` rows; answers how many. Live items are never purged."""
    before = clock.now() - parse_duration(older_than, name="older_than=", allow_zero=False)
    batch = batch or settings.PURGE_BATCH
    total = 0
    while True:
        with connections[settings.DATABASE].cursor() as cursor:
            run_query(cursor, "workitem_purge", {"before": before, "batch": batch})
            deleted: int = cursor.rowcount
        total += deleted
        if deleted < batch:
            break
    logger.info("items purged count=%s before=%s", total, before.isoformat())
    return total
