"""Retention of finished jobs: ``purge`` deletes the rows older than their state's
``LITEJOBS["RETENTION"]``, a batch per statement, and the per-minute counters past theirs.

Housekeeping runs it daily, ``manage.py litejobs purge`` on demand; it logs on the operator
verbs' logger with who asked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..core.enums import TERMINAL
from ..exceptions import InvalidInput
from ..sql.cursors import run_query
from . import minutes

#: The operator verbs' logger (``docs/operating``): a purge is an operator's action.
logger = logging.getLogger("litejobs.jobs.operations")


def purge(
    *,
    now: datetime | None = None,
    by: str = "system",
    should_stop: Callable[[], bool] | None = None,
    reason: str = "",
) -> dict[str, int]:
    """Delete finished rows older than their state's retention; answers the count per state.

    Deletes ``PURGE_BATCH`` rows per statement (each its own transaction outside an atomic
    block) until none are left, so a purge of millions of rows never holds long locks; the
    rows' ``JobAttempt`` history goes with them. ``should_stop`` (the housekeeping job's
    cancellation) is asked between batches. The per-minute counters older than
    ``minutes.KEPT`` go too (one statement).
    """
    now = now or clock.now()
    limit = int(settings.PURGE_BATCH)
    if limit < 1:
        raise InvalidInput(
            f"LITEJOBS['PURGE_BATCH'] must be 1 or more; got {limit}.", code="settings-invalid"
        )
    alias = settings.DATABASE
    counts: dict[str, int] = {}
    for state in TERMINAL:
        before = now - settings.retention(state)
        deleted = 0
        while not (should_stop and should_stop()):
            with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
                run_query(cursor, "purge", {"state": state, "before": before, "limit": limit})
                batch = cursor.rowcount
            deleted += batch
            if batch < limit:
                break
        counts[str(state)] = deleted
    shown = " ".join(f"{state}={n}" for state, n in counts.items())
    logger.info("jobs purged by=%s reason=%r %s", by, reason, shown)
    minutes.purge_minutes(now)
    return counts
