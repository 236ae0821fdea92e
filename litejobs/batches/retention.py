"""The daily housekeeping's step for batches and dependencies: completed batches are kept as
long as their dead children may be (``RETENTION["dead"]``), and a dependency goes once the job
that waited is gone. Deleted ``PURGE_BATCH`` rows per statement, each in its own transaction,
until none is left or ``should_stop()``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..sql.cursors import run_query


def purge(
    *, by: str, should_stop: Callable[[], bool], now: datetime | None = None
) -> dict[str, int]:
    """Delete what is past its retention; answers the counts by record."""
    now = now or clock.now()
    limit = max(int(settings.PURGE_BATCH), 1)
    before = now - settings.retention("dead")
    return {
        "batches": _drain("batches_purge", {"before": before, "limit": limit}, should_stop),
        "dependencies": _drain("dependencies_purge", {"limit": limit}, should_stop),
    }


def _drain(name: str, params: dict[str, Any], should_stop: Callable[[], bool]) -> int:
    """Run the purge statement ``name`` until it deletes nothing more (or ``should_stop``)."""
    alias = settings.DATABASE
    deleted = 0
    while not should_stop():
        with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
            run_query(cursor, name, params)
            batch = cursor.rowcount
        deleted += batch
        if batch < params["limit"]:
            break
    return deleted
