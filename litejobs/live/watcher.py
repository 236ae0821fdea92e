"""What tells open dashboards that what they show changed: one watcher per web process.

Every dashboard page of a process (each event loop: one per daphne or uvicorn worker) shares
one connection (``Watcher``), opened when the first page subscribes and closed when the last
one leaves. It listens on the jobs' channel (``litejobs_jobs``: fired at commit when jobs
become claimable, so an enqueue shows at once) and, about once a second, reads a cheap version
of the board (``dashboard_version``: jobs settled in the current and previous minute, the last
claim's fence, live workers): completions and claims fire no NOTIFY, their paths being the hot
ones, and the per-minute counters and the fence sequence they write already say that something
settled or started. Either tells each page
``{"op": "changed"}``, at most once every ``QUIET`` seconds; the page then fetches itself again.
After a database outage the pages are told the same once the connection is back.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import psycopg
from psycopg.rows import tuple_row

from ..core import clock, extras
from ..models.jobs import NOTIFY_CHANNEL
from ..sql.cursors import arun_query
from .connections import Listening, for_this_loop

#: Where the dashboard opens its websocket (``litejobs.live.routing``).
WEBSOCKET_PATH = "/ws/litejobs/dashboard/"
#: The one key every dashboard page subscribes under.
DASHBOARD = "dashboard"
#: The permission a user needs to see the dashboard, its page as its socket (litejobs'
#: read-only group holds it): it shows every queue, problem, worker and running job.
DASHBOARD_PERMISSION = "litejobs.view_job"
#: What pages are told.
CHANGED: dict[str, Any] = {"op": "changed"}
#: How often the board's version is read while a page is open, in seconds.
POLL = 1.0
#: Changes within this many seconds of the last message are told together, after it.
QUIET = 1.0


class Watcher(Listening):
    """This event loop's connection telling its dashboard pages of changes."""

    channel: ClassVar[str] = NOTIFY_CHANNEL
    application_name: ClassVar[str] = "litejobs-dashboard"
    resync: ClassVar[dict[str, Any]] = CHANGED

    async def serve(self, conn: psycopg.AsyncConnection) -> None:
        """Poll the version, wake at a notification, and tell pages when either moved."""
        version = await read_version(conn)
        while self.subscribers:
            notified = False
            # Wakes at the first notification; those that came meanwhile (during a query, the
            # quiet pause) are read too, all at once: one message for a burst.
            async for _ in conn.notifies(timeout=POLL, stop_after=1):
                notified = True
            fresh = await read_version(conn)
            if notified or fresh != version:
                version = fresh
                await self.broadcast(CHANGED)
                await asyncio.sleep(QUIET)


async def read_version(conn: psycopg.AsyncConnection) -> tuple[Any, ...]:
    """The board's version: it moves when jobs settle or are claimed and when workers come or go."""
    async with conn.cursor(row_factory=tuple_row) as cursor:
        await arun_query(cursor, "dashboard_version", {"db_now": clock.lease_instant()})
        return tuple(await cursor.fetchone() or ())


def get_watcher() -> Watcher:
    """The running event loop's watcher (a web process has one loop, so one connection)."""
    return for_this_loop(Watcher)


def websocket_path() -> str | None:
    """The dashboard's websocket path; ``None`` on a server without live updates (channels,
    ``litejobs[live]``, is not installed): the page then reloads itself periodically."""
    return WEBSOCKET_PATH if extras.installed("channels") else None
