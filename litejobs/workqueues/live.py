"""Live updates of work-queue pages: one LISTEN connection per web process, fanned out.

A trigger on ``litejobs_workitem`` runs ``pg_notify('litejobs_workitems', <item JSON>)`` for
every new item, claim, renewal, release and resolution; PostgreSQL delivers it at commit to
every session listening on the channel. Each web process (each event loop: one per daphne or
uvicorn worker) keeps **one** ``LISTEN`` connection, opened when its first queue page
subscribes and closed when its last one leaves, and hands each notification to the consumers
of that queue in this process (``WorkQueueConsumer``).

Why not a channel layer (``channels-postgres``, or Redis): every web process must see every
change, which is exactly what LISTEN gives each connection — PostgreSQL already is the
broadcast bus, across hosts. A PostgreSQL channel layer would add a message table, its
inserts, polling or its own LISTEN, expiry and a cleanup, a dependency and a migration, to
relay what NOTIFY already delivers; and a page does not talk back to other consumers, so a
layer's group send buys nothing here. The cost of this design is one connection per web
process (not per page), which a pooler-free deployment can afford; pages are told to
re-synchronise (``{"op": "resync"}``) after the connection is re-established, so a database
restart loses no update a page shows.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from django.db import connections

from ..conf import settings
from ..core import extras
from ..models.workqueues import WORKITEM_CHANNEL

logger = logging.getLogger(__name__)

Callback = Callable[[dict[str, Any]], Awaitable[None]]

#: Where a queue page opens its websocket; ``{queue}`` is the queue's name.
WEBSOCKET_PATH = "/ws/litejobs/workqueues/{queue}/"

#: How long an idle LISTEN connection waits before checking it is still alive.
KEEPALIVE = 30.0
#: Reconnection backoff bounds, in seconds.
BACKOFF_MIN = 0.2
BACKOFF_MAX = 10.0
#: How long a new subscriber waits for the LISTEN connection before giving up.
SUBSCRIBE_TIMEOUT = 10.0


class ListenerUnavailable(Exception):
    """The LISTEN connection could not be established in time (the database is down)."""


async def connect(alias: str) -> psycopg.AsyncConnection:
    """A new autocommit async psycopg connection with the settings of Django's ``alias``."""
    params = connections[alias].get_connection_params()
    params.pop("cursor_factory", None)
    params["autocommit"] = True
    params.setdefault("application_name", "litejobs-live")
    return await psycopg.AsyncConnection.connect(**params)


class Listener:
    """This event loop's LISTEN connection and the callbacks of each queue's pages."""

    def __init__(self) -> None:
        self.subscribers: dict[str, list[Callback]] = {}
        self.connections_made = 0
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    @property
    def listening(self) -> bool:
        """Whether the LISTEN is in place right now."""
        return self._ready.is_set()

    async def subscribe(self, queue: str, callback: Callback) -> None:
        """Call ``callback(event)`` for each change of ``queue``'s items from now on.

        Returns once the LISTEN is in place, so whatever the caller reads afterwards and any
        later change together leave no gap. ``ListenerUnavailable`` when it cannot be.
        """
        self.subscribers.setdefault(queue, []).append(callback)
        if self._task is None or self._task.done():
            self._ready.clear()
            self._task = asyncio.get_running_loop().create_task(self._run())
        try:
            await asyncio.wait_for(self._ready.wait(), SUBSCRIBE_TIMEOUT)
        except TimeoutError:
            self.unsubscribe(queue, callback)
            raise ListenerUnavailable(
                "Live updates are unavailable: the database does not answer."
            ) from None

    def unsubscribe(self, queue: str, callback: Callback) -> None:
        """Stop calling ``callback``; the last one leaving closes the connection."""
        callbacks = self.subscribers.get(queue, [])
        if callback in callbacks:
            callbacks.remove(callback)
        if not callbacks:
            self.subscribers.pop(queue, None)
        if not self.subscribers and self._task is not None:
            self._task.cancel()
            self._task = None
            self._ready.clear()

    async def _run(self) -> None:
        backoff = BACKOFF_MIN
        outage = False
        while self.subscribers:
            conn = None
            try:
                conn = await connect(settings.DATABASE)
                await conn.execute(f"LISTEN {WORKITEM_CHANNEL}")
                reconnected = self.connections_made > 0
                self.connections_made += 1
                self._ready.set()
                backoff = BACKOFF_MIN
                if outage:
                    logger.info("live updates recovered")
                    outage = False
                if reconnected:  # what changed while it was down is unknown: pages re-read
                    await self._broadcast({"op": "resync"})
                while self.subscribers:
                    async for notify in conn.notifies(timeout=KEEPALIVE):
                        await self._dispatch(notify.payload)
                    await conn.execute("SELECT 1")  # idle: is the connection still alive?
            except asyncio.CancelledError:
                raise
            except (psycopg.Error, OSError) as error:
                self._ready.clear()
                if not outage:
                    logger.warning("live updates unavailable: %s", error.__class__.__name__)
                    outage = True
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)
            finally:
                if conn is not None:
                    await conn.close()

    async def _dispatch(self, payload: str) -> None:
        try:
            event = json.loads(payload)
        except ValueError:
            logger.warning("live updates: unreadable notification ignored")
            return
        for callback in list(self.subscribers.get(event.get("queue"), ())):
            await self._call(callback, event)

    async def _broadcast(self, event: dict[str, Any]) -> None:
        for callbacks in list(self.subscribers.values()):
            for callback in list(callbacks):
                await self._call(callback, dict(event))

    @staticmethod
    async def _call(callback: Callback, event: dict[str, Any]) -> None:
        try:
            await callback(event)
        except Exception:  # one broken page must not silence the others
            logger.exception("live updates: a subscriber failed")


_listeners: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Listener] = (
    weakref.WeakKeyDictionary()
)


def get_listener() -> Listener:
    """The running event loop's listener (a web process has one loop, so one connection)."""
    loop = asyncio.get_running_loop()
    listener = _listeners.get(loop)
    if listener is None:
        listener = _listeners[loop] = Listener()
    return listener


def websocket_path(queue: str) -> str | None:
    """The websocket path of ``queue``'s page; ``None`` on a server without live updates
    (channels, ``litejobs[live]``, is not installed): the page then says so."""
    if not extras.installed("channels"):
        return None
    return WEBSOCKET_PATH.format(queue=queue)
