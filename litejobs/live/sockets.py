"""The sockets of live admin pages (their websockets, each a Channels consumer): what every
one shares (``PageSocket``: admit, subscribe, re-check, close) and the dashboard's
(``DashboardSocket``).

Only active staff users the page allows get a socket, and they are read again from the database
while it stays open (``litejobs.live.access``): a user who may no longer see the page gets the
socket closed with ``CLOSE_FORBIDDEN`` at the next event after the re-check interval.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from ..core import clock
from .access import Guard
from .connections import ListenerUnavailable, Listening
from .watcher import DASHBOARD, DASHBOARD_PERMISSION, get_watcher

logger = logging.getLogger(__name__)

#: Close codes the pages understand: not allowed (do not retry), and try again later.
CLOSE_FORBIDDEN = 4403
CLOSE_UNAVAILABLE = 4503


class PageSocket(AsyncJsonWebsocketConsumer, ABC):
    """One open live page: its user's admission and re-checks, and its subscription."""

    guard: Guard
    listening: Listening | None = None
    key = ""

    @abstractmethod
    def allows(self, user: Any) -> bool:
        """Whether the page shows to ``user`` (already known to be active staff)."""

    async def admit(self) -> bool:
        """Whether the scope's user may open the page; the socket is closed if not."""
        self.guard = Guard(self.allows)
        if await database_sync_to_async(self.guard.admit)(
            self.scope.get("user"), self.scope.get("session")
        ):
            return True
        await self.close(code=CLOSE_FORBIDDEN)
        return False

    async def join(self, listening: Listening, key: str) -> bool:
        """Subscribe to ``key``'s changes; the socket is closed if the database is down."""
        try:
            await listening.subscribe(key, self.forward)
        except ListenerUnavailable:
            await self.close(code=CLOSE_UNAVAILABLE)
            return False
        self.listening, self.key = listening, key
        return True

    def leave(self) -> None:
        """Leave the subscription (the last page of the process closes the connection)."""
        if self.listening is not None:
            listening, self.listening = self.listening, None
            listening.unsubscribe(self.key, self.forward)

    async def disconnect(self, code: int) -> None:
        """The page went away."""
        self.leave()

    async def forward(self, event: dict[str, Any]) -> None:
        """A change the page shows (or a resync), stamped with the server time."""
        if await self.still_allowed():
            await self.send_json({**event, "now": clock.now().isoformat()})

    async def still_allowed(self) -> bool:
        """Whether the user may still see the page, read from the database at most every
        ``PERMISSION_RECHECK`` seconds; if not, the socket is closed (``CLOSE_FORBIDDEN``)."""
        if self.listening is None:
            return False
        if not self.guard.due() or await database_sync_to_async(self.guard.still_allowed)():
            return True
        logger.info(
            "live page closed page=%s user=%s reason=forbidden", self.key, self.guard.user_pk
        )
        # Close before leaving the subscription: the last page leaving stops the listener task
        # this may run in, and the close must be sent first.
        await self.close(code=CLOSE_FORBIDDEN)
        self.leave()
        return False


class DashboardSocket(PageSocket):
    """An open dashboard: told ``{"op": "changed"}`` when what it shows changed."""

    def allows(self, user: Any) -> bool:
        """Users who may view litejobs' jobs (the read-only group, superusers)."""
        return bool(user.has_perm(DASHBOARD_PERMISSION))

    async def connect(self) -> None:
        """Admit staff users who may view jobs, then subscribe to the process's watcher."""
        if not await self.admit():
            return
        await self.accept()
        if await self.join(get_watcher(), DASHBOARD):
            await self.send_json({"op": "ready", "now": clock.now().isoformat()})
