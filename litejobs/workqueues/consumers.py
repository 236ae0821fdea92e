"""Channels consumers: the websocket of a work-queue page (live claims and resolutions).

A page opens ``ws/litejobs/workqueues/<queue>/`` (``routing``). The consumer admits only
users who may work the queue, subscribes to this process's LISTEN connection (``live``), and
then answers the page's ``{"op": "watch", "ids": [...]}`` with the current state of those
items — read *after* the LISTEN is in place, so a change made between the page's render and
the socket's opening is never missed. From then on every committed
change of the queue's items arrives as ``{"op": "insert"|"update", "id": ..., "state": ...,
"holder": ..., "claim_expires_at": ..., "now": <server time>}``; ``{"op": "resync"}`` asks the
page to send its ``watch`` again (the database connection was re-established).

Only active staff users who may work the queue get a socket (the page is an admin page). That
is not only checked at connect: a page stays open for hours, and a user who logs out, whose
session expires or whose password changes, who is deactivated or loses staff status or the
queue's permission meanwhile must stop seeing its items. Before an event or a snapshot is sent,
the consumer reads the session and the user again from the database (not the connect-time
user, whose permissions are cached) at most every ``PERMISSION_RECHECK`` seconds: the session
must still exist, name the same user and carry their current auth hash (as Django's own
``get_user`` requires). It closes the socket (``CLOSE_FORBIDDEN``) otherwise. A scope without a
session (an ASGI stack that authenticates otherwise) has only its user read again.
"""

from __future__ import annotations

import logging
import time
from importlib import import_module
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings as django_settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user_model,
    load_backend,
)
from django.utils.crypto import constant_time_compare

from ..core import clock
from . import declarations as queues
from . import listing, live
from .errors import WorkQueueNotFound

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
    return bool(
        user is not None
        and user.is_authenticated
        and getattr(user, "is_staff", False)
        and queue.allows(user)
    )


def _session_pk(value: Any) -> Any:
    return get_user_model()._meta.pk.to_python(value)


def _login_session(user: Any, session: Any) -> str | None:
    """The key of the session the scope's user logged in with; None when the scope has none
    (its ASGI stack authenticates otherwise)."""
    if session is None or session.session_key is None or SESSION_KEY not in session:
        return None
    return session.session_key if _session_pk(session[SESSION_KEY]) == user.pk else None


def _admitted(queue_name: str, user: Any, session: Any) -> tuple[bool, str | None]:
    """Whether the scope's user may open the page, and the key of their login session."""
    if not _allowed(queue_name, user):
        return False, None
    return True, _login_session(user, session)


def _session_user(session_key: str, user_pk: Any) -> Any:
    """The user ``session_key`` is still logged in as, if it is ``user_pk``: the session exists
    (not logged out, not expired), names them, and carries their current auth hash (a password
    change logs every other session out). Read without changing the session."""
    session = import_module(django_settings.SESSION_ENGINE).SessionStore(session_key)
    backend_path = session.get(BACKEND_SESSION_KEY)
    if (
        SESSION_KEY not in session
        or _session_pk(session[SESSION_KEY]) != user_pk
        or backend_path not in django_settings.AUTHENTICATION_BACKENDS
    ):
        return None
    user = load_backend(backend_path).get_user(user_pk)
    return user if user is not None and _hash_matches(user, session.get(HASH_SESSION_KEY)) else None


def _hash_matches(user: Any, stored: Any) -> bool:
    """As Django's ``get_user``: the session's hash is the user's (or a ``SECRET_KEY_FALLBACKS``
    one); a user model without session hashes has nothing to compare."""
    if not hasattr(user, "get_session_auth_hash"):
        return True
    known = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    return bool(stored) and any(constant_time_compare(stored, value) for value in known)


def _still_allowed(queue_name: str, user_pk: Any, session_key: str | None = None) -> bool:
    """``_allowed`` for the user as the database has them now (session, active and staff flags,
    permissions)."""
    if session_key is None:
        user = get_user_model()._default_manager.filter(pk=user_pk).first()
    else:
        user = _session_user(session_key, user_pk)
    return user is not None and _allowed(queue_name, user)


class WorkQueueConsumer(AsyncJsonWebsocketConsumer):
    """One open queue page: its permission, its subscription, its item snapshots."""

    queue_name = ""
    subscribed = False
    user_pk: Any = None
    session_key: str | None = None
    checked_at = 0.0

    async def connect(self) -> None:
        """Admit staff users holding the queue's permission, then subscribe to its changes."""
        self.queue_name = self.scope["url_route"]["kwargs"]["queue"]
        user = self.scope.get("user")
        allowed, self.session_key = await database_sync_to_async(_admitted)(
            self.queue_name, user, self.scope.get("session")
        )
        if not allowed:
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
        states = await database_sync_to_async(listing.snapshot)(self.queue_name, ids)
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
        if await database_sync_to_async(_still_allowed)(
            self.queue_name, self.user_pk, self.session_key
        ):
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
