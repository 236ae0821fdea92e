"""Events that durable steps wait for: declared by name, published in the caller's transaction.

``event("payment.settled")`` declares a name (so a typo is an error, not a silent wait).
``publish_event(name, payload)`` inserts the event and moves every job waiting for it (a
waiting step whose ``match`` the payload contains) to run now — both in the caller's
transaction: an event published in a transaction that rolls back never wakes anyone.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Any

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..core.payloads import encode_payload
from ..core.registry import Registry
from ..exceptions import DeclarationError, InvalidInput
from ..sql.cursors import hot_cursor, run_query

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.:-]{0,199}$")


def _unknown(name: str) -> InvalidInput:
    return InvalidInput(
        f"No event named {name!r} is declared. Declare it with litejobs.event({name!r}) "
        "in one of your apps' jobs.py (known events: "
        f"{', '.join(sorted(_events)) or 'none'}).",
        code="event-unknown",
    )


#: Declaring a name again replaces it (the same name is the same event).
_events: Registry[EventDefinition] = Registry("event", origin=None, missing=_unknown)


@dataclass(frozen=True)
class EventDefinition:
    """A declared event name."""

    name: str
    description: str = ""


def event(name: str, description: str = "") -> EventDefinition:
    """Declare an event that steps may wait for and code may publish."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise DeclarationError(
            f"Event name {name!r} must be 1-200 lowercase letters, digits or '_.:-', e.g. "
            "'payment.settled'.",
            code="event-invalid",
        )
    return _events.register(name, EventDefinition(name, description))


def declared(name: str) -> EventDefinition:
    """The declaration of ``name``; ``InvalidInput`` (``event-unknown``) if there is none."""
    return _events[name]


def lock_id(name: str) -> int:
    """The advisory lock that orders publishers and waiters of one event name."""
    return zlib.crc32(f"litejobs.event:{name}".encode()) - 2**31


def publish_event(name: str, payload: dict[str, Any] | None = None) -> int:
    """Publish an event in the caller's transaction; answers how many waiting jobs it woke."""
    declared(name)
    payload = {} if payload is None else payload
    if not isinstance(payload, dict):
        raise InvalidInput(
            f"The payload of event {name!r} must be a dict of JSON values.",
            code="event-payload-invalid",
        )
    text = encode_payload(f"event {name}", payload, settings.count("MAX_PAYLOAD_BYTES"))
    alias = settings.DATABASE
    with transaction.atomic(using=alias), hot_cursor(connections[alias]) as cursor:
        # Waiters take the same lock before they decide how long to sleep, so an event is
        # either visible to a waiter's check or finds the waiter already waiting.
        run_query(cursor, "event_lock", {"lock_id": lock_id(name)})
        run_query(cursor, "event_publish", {"name": name, "payload": text, "now": clock.now()})
        published: int = cursor.rowcount
        return published
