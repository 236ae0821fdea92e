"""The LISTEN connections of live pages: one per web process (per event loop) and purpose,
opened when its first page subscribes and closed when its last one leaves, outside Django's
connections (which are per thread and per request), autocommit, named so operators see them in
``pg_stat_activity``.

``Listening`` is what every such connection shares: the pages' callbacks, the connection's
lifetime, and its recovery from database outages (reconnect with backoff; once back, every page
is told to re-read, since what changed meanwhile is unknown). Its subclasses say what the
connection does while it is up: the work-queue pages'
``litejobs.workqueues.live.WorkItemListener`` and the dashboard's
``litejobs.live.watcher.Watcher``.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeVar, cast

import psycopg
from django.db import connections

from ..conf import settings

logger = logging.getLogger(__name__)

Callback = Callable[[dict[str, Any]], Awaitable[None]]

#: Reconnection backoff bounds, in seconds.
BACKOFF_MIN = 0.2
BACKOFF_MAX = 10.0
#: How long a new subscriber waits for the LISTEN connection before giving up.
SUBSCRIBE_TIMEOUT = 10.0


class ListenerUnavailable(Exception):
    """The LISTEN connection could not be established in time (the database is down)."""


async def connect(alias: str, application_name: str) -> psycopg.AsyncConnection:
    """A new autocommit async psycopg connection with the settings of Django's ``alias``."""
    params = connections[alias].get_connection_params()
    params.pop("cursor_factory", None)
    params["autocommit"] = True
    params.setdefault("application_name", application_name)
    return await psycopg.AsyncConnection.connect(**params)


class Listening(ABC):
    """One event loop's LISTEN connection on ``channel`` and the callbacks of its pages, by key
    (a queue's name, or one key for every dashboard)."""

    #: The NOTIFY channel listened to, and how the connection shows in ``pg_stat_activity``.
    channel: ClassVar[str]
    application_name: ClassVar[str]
    #: What pages are sent once the connection is back after an outage.
    resync: ClassVar[dict[str, Any]]

    def __init__(self) -> None:
        self.subscribers: dict[str, list[Callback]] = {}
        self.connections_made = 0
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    @property
    def listening(self) -> bool:
        """Whether the LISTEN is in place right now."""
        return self._ready.is_set()

    async def subscribe(self, key: str, callback: Callback) -> None:
        """Call ``callback(event)`` for each change ``key``'s pages are told of from now on.

        Returns once the LISTEN is in place, so whatever the caller reads afterwards and any
        later change together leave no gap. ``ListenerUnavailable`` when it cannot be.
        """
        self.subscribers.setdefault(key, []).append(callback)
        if self._task is None or self._task.done():
            self._ready.clear()
            self._task = asyncio.get_running_loop().create_task(self._run())
        try:
            await asyncio.wait_for(self._ready.wait(), SUBSCRIBE_TIMEOUT)
        except TimeoutError:
            self.unsubscribe(key, callback)
            raise ListenerUnavailable(
                "Live updates are unavailable: the database does not answer."
            ) from None

    def unsubscribe(self, key: str, callback: Callback) -> None:
        """Stop calling ``callback``; the last one leaving closes the connection."""
        callbacks = self.subscribers.get(key, [])
        if callback in callbacks:
            callbacks.remove(callback)
        if not callbacks:
            self.subscribers.pop(key, None)
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
                conn = await connect(settings.DATABASE, self.application_name)
                await conn.execute(f"LISTEN {self.channel}")
                reconnected = self.connections_made > 0
                self.connections_made += 1
                self._ready.set()
                backoff = BACKOFF_MIN
                if outage:
                    logger.info("%s recovered", self.application_name)
                    outage = False
                if reconnected:  # what changed while it was down is unknown: pages re-read
                    await self.broadcast(self.resync)
                await self.serve(conn)
            except asyncio.CancelledError:
                raise
            except (psycopg.Error, OSError) as error:
                self._ready.clear()
                if not outage:
                    logger.warning(
                        "%s unavailable: %s", self.application_name, error.__class__.__name__
                    )
                    outage = True
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)
            finally:
                if conn is not None:
                    await conn.close()

    @abstractmethod
    async def serve(self, conn: psycopg.AsyncConnection) -> None:
        """Tell the pages of the changes ``conn`` learns of while it is up and anyone listens;
        a database error ends it (the connection is then made again)."""

    async def send(self, key: str, event: dict[str, Any]) -> None:
        """Hand ``event`` to the callbacks of ``key``'s pages."""
        for callback in list(self.subscribers.get(key, ())):
            await self._call(callback, dict(event))

    async def broadcast(self, event: dict[str, Any]) -> None:
        """Hand ``event`` to every page."""
        for key in list(self.subscribers):
            await self.send(key, event)

    @staticmethod
    async def _call(callback: Callback, event: dict[str, Any]) -> None:
        try:
            await callback(event)
        except Exception:  # one broken page must not silence the others
            logger.exception("live updates: a subscriber failed")


L = TypeVar("L", bound=Listening)

_running: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[type, Listening]] = (
    weakref.WeakKeyDictionary()
)


def for_this_loop(kind: type[L]) -> L:
    """The running event loop's ``kind`` (a web process has one loop, so one connection)."""
    found = _running.setdefault(asyncio.get_running_loop(), {})
    if kind not in found:
        found[kind] = kind()
    return cast(L, found[kind])
