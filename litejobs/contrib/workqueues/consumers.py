"""Channels consumers: the websocket of a work-queue page (live claims and resolutions).

A page opens ``ws/litejobs/workqueues/<queue>/`` (``routing``). The consumer admits only
users who may work the queue, subscribes to this process's LISTEN connection (``live``), and
then answers the page's ``{"op": "watch", "ids": [...]}`` with the current state of those
items — read *after* the LISTEN is in place, so a change made between the page's render and
the socket's opening is never missed. From then on every committed
change of the queue's items arrives as ``{"op": "insert"|"update", "id": ..., "state": ...,
"holder": ..., "claim_expires_at": ..., "now": <server time>}``; ``{"op": "resync"}`` asks the
page to send its ``watch`` again (the database connection was re-established).

The permission is not only checked at connect: a page stays open for hours, and a user who is
deactivated or loses the queue's permission meanwhile must stop seeing its items. Before an
event or a snapshot is sent, the consumer reads the user again from the database (not the
connect-time user, whose permissions are cached) at most every ``PERMISSION_RECHECK`` seconds,
and closes the socket (``CLOSE_FORBIDDEN``) once they may no longer work the queue.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth import get_user_model

from ...core import clock
from ...exceptions import WorkQueueNotFound
from . import declarations as queues
from . import items as workqueues
from . import live

logger = logging.getLogger(__name__)

#: Close codes the page understands: not allowed (do not retry), and try again later.
CLOSE_FORBIDDEN = 4403
CLOSE_UNAVAILABLE = 4503
#: At most this many seconds pass between two database reads of a page's permission while it
#: receives events (a revoked user sees at most this much more).
PERMISSION_RECHECK = 5.0


def _allowed(queue_name: str, user: Any) -> bool:
    try:
        queue = queues.get(queue_name)
    except WorkQueueNotFound:
        return False
    return bool(user is not None and user.is_authenticated and queue.allows(user))


def _still_allowed(queue_name: str, user_pk: Any) -> bool:
    """``_allowed`` for the user as the database has them now (active flag, permissions)."""
    user = get_user_model()._default_manager.filter(pk=user_pk).first()
    return user is not None and _allowed(queue_name, user)


class WorkQueueConsumer(AsyncJsonWebsocketConsumer):
    """One open queue page: its permission, its subscription, its item snapshots."""

    queue_name = ""
    subscribed = False
    user_pk: Any = None
    checked_at = 0.0

    async def connect(self) -> None:
        """Admit users holding the queue's permission, then subscribe to its changes."""
        self.queue_name = self.scope["url_route"]["kwargs"]["queue"]
        user = self.scope.get("user")
        if not await database_sync_to_async(_allowed)(self.queue_name, user):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.user_pk, self.checked_at = user.pk, time.monotonic()
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
        if not await self.still_allowed():
            return
        states = await database_sync_to_async(workqueues.snapshot)(self.queue_name, ids)
        await self.send_json({"op": "items", "items": states, "now": clock.now().isoformat()})

    async def forward(self, event: dict[str, Any]) -> None:
        """A change of one of the queue's items (or a resync), stamped with the server time."""
        if not await self.still_allowed():
            return
        await self.send_json({**event, "now": clock.now().isoformat()})

    async def still_allowed(self) -> bool:
        """Whether the user may still work the queue, read from the database at most every
        ``PERMISSION_RECHECK`` seconds; if not, the socket is closed (``CLOSE_FORBIDDEN``)."""
        if not self.subscribed:
            return False
        now = time.monotonic()
        if now - self.checked_at < PERMISSION_RECHECK:
            return True
        self.checked_at = now
        if await database_sync_to_async(_still_allowed)(self.queue_name, self.user_pk):
            return True
        logger.info(
            "live page closed queue=%s user=%s reason=forbidden", self.queue_name, self.user_pk
        )
        # Close before leaving the subscription: the last page leaving stops the listener task
        # this may run in, and the close must be sent first.
        await self.close(code=CLOSE_FORBIDDEN)
        self.subscribed = False
        live.get_listener().unsubscribe(self.queue_name, self.forward)
        return False
