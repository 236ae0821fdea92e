"""The socket of a work-queue page (its websocket, a Channels consumer): live claims and
resolutions.

A page opens ``ws/litejobs/workqueues/<queue>/`` (``routing``). The socket admits only
users who may work the queue, subscribes to this process's LISTEN connection (``live``), and
then answers the page's ``{"op": "watch", "ids": [...]}`` with the current state of those
items — read *after* the LISTEN is in place, so a change made between the page's render and
the socket's opening is never missed. From then on every committed
change of the queue's items arrives as ``{"op": "insert"|"update", "id": ..., "state": ...,
"holder": ..., "claim_expires_at": ..., "now": <server time>}``; ``{"op": "resync"}`` asks the
page to send its ``watch`` again (the database connection was re-established).

Only active staff users who may work the queue get a socket (the page is an admin page), and
they are read again from the database before an event or a snapshot is sent, at most every
``PERMISSION_RECHECK`` seconds, as on every live page (``litejobs.live.access``,
``litejobs.live.sockets.PageSocket``): the socket is closed (``CLOSE_FORBIDDEN``) once they
may no longer see the queue.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from ..core import clock
from ..live.sockets import CLOSE_FORBIDDEN, CLOSE_UNAVAILABLE, PageSocket
from . import declarations as queues
from . import listing, live
from .errors import WorkQueueNotFound

__all__ = ["CLOSE_FORBIDDEN", "CLOSE_UNAVAILABLE", "WorkQueueSocket"]


class WorkQueueSocket(PageSocket):
    """One open queue page: its permission, its subscription, its item snapshots."""

    queue_name = ""

    def allows(self, user: Any) -> bool:
        """Users who may work the queue (a queue no longer declared allows nobody)."""
        try:
            return queues.get(self.queue_name).allows(user)
        except WorkQueueNotFound:
            return False

    async def connect(self) -> None:
        """Admit staff users holding the queue's permission, then subscribe to its changes."""
        self.queue_name = self.scope["url_route"]["kwargs"]["queue"]
        if not await self.admit():
            return
        await self.accept()
        if await self.join(live.get_listener(), self.queue_name):
            await self.send_json({"op": "ready", "now": clock.now().isoformat()})

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """``{"op": "watch", "ids": [...]}``: answer those items' current state."""
        if not isinstance(content, dict) or content.get("op") != "watch":
            return
        ids = [i for i in content.get("ids", []) if isinstance(i, int) and not isinstance(i, bool)]
        if not await self.still_allowed():
            return
        states = await database_sync_to_async(listing.snapshot)(self.queue_name, ids)
        await self.send_json({"op": "items", "items": states, "now": clock.now().isoformat()})
