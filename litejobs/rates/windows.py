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
from ..jobs.ratelimits import Window
from ..sql.cursors import fetch_all, run_query

__all__ = ["Bucket", "buckets", "purge", "waiting_by_queue"]

#: A bucket with no start for this long past its window is purged.
IDLE = timedelta(hours=1)
#: The most buckets one read answers (the admin pages through them, by key).
PAGE = 500


@dataclass(frozen=True)
class Bucket:
    """One rate key's window as of now (the database's clock): its starts inside it, the
    starts left, and the next possible start when none is left."""

    key: str
    window: Window
    last_start_at: datetime
    #: Due jobs of the key waiting to start.
    waiting: int

    @property
    def limit(self) -> int:
        """Starts allowed in any window."""
        return self.window.limit

    @property
    def per(self) -> timedelta:
        """The window's length."""
        return self.window.per

    @property
    def used(self) -> int:
        """Starts inside the window now."""
        return self.window.used

    @property
    def left(self) -> int:
        """Starts left in the window now."""
        return self.window.left

    @property
    def next_start(self) -> datetime | None:
        """When one more start fits (None: now)."""
        return self.window.next_start

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
    entries = [(row["starts"] or [], row["counts"] or []) for row in rows]
    return [
        Bucket(
            key=row["key"],
            # Already cut to the window on the database's clock.
            window=Window(tuple(zip(starts, counts, strict=True)), row["limit"], row["per"]),
            last_start_at=row["last_start_at"],
            waiting=row["waiting"],
        )
        for row, (starts, counts) in zip(rows, entries, strict=True)
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
