"""Reading the rate buckets the limited claim keeps (the admin, ``manage.py litejobs rates``,
the metrics) and purging idle ones (the daily housekeeping)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..core.durations import format_duration
from ..sql.cursors import fetch_all, run_query

__all__ = ["Bucket", "buckets", "purge", "waiting_by_queue"]

#: A bucket with no start for this long past its window is purged.
IDLE = timedelta(hours=1)
#: The most buckets one read answers (the admin pages through them, by key).
PAGE = 500


@dataclass(frozen=True)
class Bucket:
    """One rate key's window as of ``now`` (the database's clock): its starts inside it, the
    starts left, and the next possible start when none is left."""

    key: str
    limit: int
    per: timedelta
    used: int
    starts: tuple[datetime, ...]
    last_start_at: datetime
    #: Due jobs of the key waiting to start.
    waiting: int

    @property
    def left(self) -> int:
        """Starts left in the window now."""
        return max(0, self.limit - self.used)

    @property
    def next_start(self) -> datetime | None:
        """When one more start fits (None: now): the oldest start that must leave the window,
        plus ``per``."""
        if self.used < self.limit:
            return None
        return self.starts[self.used - self.limit] + self.per

    def as_json(self) -> dict[str, Any]:
        """The bucket as plain JSON values."""
        return {
            "key": self.key,
            "limit": self.limit,
            "per": format_duration(self.per),
            "starts_in_window": self.used,
            "starts_left": self.left,
            "next_start": clock.iso(self.next_start),
            "last_start_at": clock.iso(self.last_start_at),
            "waiting": self.waiting,
        }


def _params(**extra: Any) -> dict[str, Any]:
    return {"db_now": clock.lease_instant(), **extra}


def buckets(*, after: str = "", limit: int = PAGE) -> list[Bucket]:
    """The buckets by key (up to ``limit``, keys after ``after``), each as of now."""
    with connections[settings.DATABASE].cursor() as cursor:
        run_query(cursor, "rate_buckets", _params(after=after, limit=limit))
        rows = fetch_all(cursor)
    return [
        Bucket(
            key=row["key"],
            limit=row["limit"],
            per=row["per"],
            used=row["used"],
            starts=tuple(row["starts"] or ()),
            last_start_at=row["last_start_at"],
            waiting=row["waiting"],
        )
        for row in rows
    ]


def waiting_by_queue() -> dict[str, int]:
    """Queue -> its due rate-limited jobs whose bucket has no start left now."""
    with connections[settings.DATABASE].cursor() as cursor:
        run_query(cursor, "rate_limited_waiting", _params())
        return {row["queue"]: row["waiting"] for row in fetch_all(cursor)}


def purge(*, should_stop: Callable[[], bool] | None = None) -> dict[str, int]:
    """Delete buckets idle for ``IDLE`` past their window, ``PURGE_BATCH`` per statement;
    answers the count. Stops between batches once ``should_stop()``."""
    limit = settings.count("PURGE_BATCH")
    alias = settings.DATABASE
    deleted = 0
    while should_stop is None or not should_stop():
        with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
            run_query(cursor, "rate_purge_idle", _params(idle=IDLE, limit=limit))
            batch = cursor.rowcount
        deleted += batch
        if batch < limit:
            break
    return {"idle_buckets": deleted}
