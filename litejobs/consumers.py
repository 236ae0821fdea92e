"""Channels consumers: the websocket of a work-queue page (live claims and resolutions).

A page opens ``ws/litejobs/workqueues/<queue>/`` (``litejobs.routing``). The consumer admits
only users who may work the queue, subscribes to this process's LISTEN connection
(``litejobs.live``), and then answers the page's ``{"op": "watch", "ids": [...]}`` with the
current state of those items — read *after* the LISTEN is in place, so a change made between
the page's render and the socket's opening is never missed. From then on every committed
change of the queue's items arrives as ``{"op": "insert"|"update", "id": ..., "state": ...,
"holder": ..., "claim_expires_at": ..., "now": <server time>}``; ``{"op": "resync"}`` asks the
page to send its ``watch`` again (the database connection was re-established).
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from . import clock, live, queues, workqueues
from .exceptions import WorkQueueNotFound

#: Close codes the page understands: not allowed (do not retry), and try again later.
CLOSE_FORBIDDEN = 4403
CLOSE_UNAVAILABLE = 4503


def _allowed(queue_name: str, user: Any) -> bool:
    try:
        queue = queues.get(queue_name)
    except WorkQueueNotFound:
        return False
    return bool(user is not None and user.is_authenticated and queue.allows(user))


class WorkQueueConsumer(AsyncJsonWebsocketConsumer):
    """One open queue page: its permission, its subscription, its item snapshots."""

    queue_name = ""
    subscribed = False

    async def connect(self) -> None:
        """Admit users holding the queue's permission, then subscribe to its changes."""
        self.queue_name = self.scope["url_route"]["kwargs"]["queue"]
        if not await database_sync_to_async(_allowed)(self.queue_name, self.scope.get("user")):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self.accept()
        try:
            await live.get_listener().subscribe(self.queue_name, self.forward)
        except live.ListenerUnavailable:
            await self.close(code=CLOSE_UNAVAILABLE)
            return
        self.subscribed = True
        await self.send_json({"op": "ready", "now": clock.now().isoformat()})

    async def disconnect(self, code: int) -> None:
        """Leave the subscription (the last page of the process closes the connection)."""
        if self.subscribed:
            live.get_listener().unsubscribe(self.queue_name, self.forward)
            self.subscribed = False

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """``{"op": "watch", "ids": [...]}``: answer those items' current state."""
        if not isinstance(content, dict) or content.get("op") != "watch":
            return
        ids = [i for i in content.get("ids", []) if isinstance(i, int) and not isinstance(i, bool)]
        states = await database_sync_to_async(workqueues.snapshot)(self.queue_name, ids)
        await self.send_json({"op": "items", "items": states, "now": clock.now().isoformat()})

    async def forward(self, event: dict[str, Any]) -> None:
        """A change of one of the queue's items (or a resync), stamped with the server time."""
        await self.send_json({**event, "now": clock.now().isoformat()})
