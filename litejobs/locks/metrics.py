"""Fenced locks' metric families (``Feature.metrics``; the metrics add-on serves them):

``litejobs_locks_held``: keys held now (not released, not lapsed on the database's clock);
``litejobs_locks_lost_total``: blocks that ended without their lock since litejobs was
installed, counted for good in the database by the release that found it lost (a block whose
release cannot reach the database is not counted). No labels: keys are the caller's, unbounded.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from django.db import connections

from ..conf import settings
from ..core.features import Family
from ..sql.cursors import fetch_one, run_query


def families(now: datetime) -> Iterator[Family]:
    """The locks held now and the lost ones."""
    with connections[settings.DATABASE].cursor() as cursor:
        run_query(cursor, "lock_counts", {"db_now": None})
        row = fetch_one(cursor) or {"held": 0, "lost": 0}
    held = Family("litejobs_locks_held", "Lock keys held now, across every host.")
    held.add((), row["held"])
    lost = Family(
        "litejobs_locks_lost",
        "Lock blocks that ended without their lock (no renewal landed in time, or taken over).",
        counter=True,
    )
    lost.add((), row["lost"])
    yield from (held, lost)
