"""Live updates of work-queue pages: one LISTEN connection per web process, fanned out.

A trigger on ``litejobs_workitem`` runs ``pg_notify('litejobs_workitems', <item JSON>)`` for
every new item, claim, renewal, release and resolution; PostgreSQL delivers it at commit to
every session listening on the channel. Each web process (each event loop: one per daphne or
uvicorn worker) keeps **one** ``LISTEN`` connection, opened when its first queue page
subscribes and closed when its last one leaves, and hands each notification to the sockets
of that queue in this process (``WorkQueueSocket``).

Why not a channel layer (``channels-postgres``, or Redis): every web process must see every
change, which is exactly what LISTEN gives each connection — PostgreSQL already is the
broadcast bus, across hosts. A PostgreSQL channel layer would add a message table, its
inserts, polling or its own LISTEN, expiry and a cleanup, a dependency and a migration, to
relay what NOTIFY already delivers; and a page does not talk back to other pages, so a
layer's group send buys nothing here. The cost of this design is one connection per web
process (not per page), which a pooler-free deployment can afford; pages are told to
re-synchronise (``{"op": "resync"}``) after the connection is re-established, so a database
restart loses no update a page shows.
"""

from __future__ import annotations

import json
import logging
from typing import ClassVar

import psycopg

from ..core import extras
from ..live.connections import Listening, for_this_loop
from ..models.workqueues import WORKITEM_CHANNEL

logger = logging.getLogger(__name__)

#: Where a queue page opens its websocket; ``{queue}`` is the queue's name.
WEBSOCKET_PATH = "/ws/litejobs/workqueues/{queue}/"

#: How long an idle LISTEN connection waits before checking it is still alive.
KEEPALIVE = 30.0


class WorkItemListener(Listening):
    """This event loop's LISTEN connection and the callbacks of each queue's pages."""

    channel: ClassVar[str] = WORKITEM_CHANNEL
    application_name: ClassVar[str] = "litejobs-live"
    resync: ClassVar[dict[str, str]] = {"op": "resync"}

    async def serve(self, conn: psycopg.AsyncConnection) -> None:
        """Hand each notification to the pages of its item's queue."""
        while self.subscribers:
            async for notify in conn.notifies(timeout=KEEPALIVE):
                await self._dispatch(notify.payload)
            await conn.execute("SELECT 1")  # idle: is the connection still alive?

    async def _dispatch(self, payload: str) -> None:
        try:
            event = json.loads(payload)
        except ValueError:
            logger.warning("live updates: unreadable notification ignored")
            return
        await self.send(str(event.get("queue")), event)


def get_listener() -> WorkItemListener:
    """The running event loop's listener (a web process has one loop, so one connection)."""
    return for_this_loop(WorkItemListener)


def websocket_path(queue: str) -> str | None:
    """The websocket path of ``queue``'s page; ``None`` on a server without live updates
    (channels, ``litejobs[live]``, is not installed): the page then says so."""
    if not extras.installed("channels"):
        return None
    return WEBSOCKET_PATH.format(queue=queue)
