"""Staging: ``stage()`` an event with your business change; subscribers and webhook endpoints
receive it once the change has committed.

```python
with transaction.atomic():
    order.mark_paid()
    stage("orders.paid", {"order_id": order.pk}, key=f"order:{order.pk}")
```

``stage`` inserts an ``OutboxMessage`` through the caller's connection, so it commits or rolls
back with the caller's transaction. The relay (``litejobs.outbox.relay``: inside ``runworker``, or
``manage.py runrelay``) publishes committed messages in id order, in batches: one job per
subscriber (keyed ``outbox:<message id>``) and one delivery job per interested webhook
endpoint, written in the same transaction that marks the batch published. Messages that share
a ``key`` are published in the order they were staged (see README "Outbox and webhooks").
The topics it accepts are declared (``litejobs.outbox.declarations``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from django.db import connections

from ..conf import settings
from ..core import clock
from ..core.payloads import dumps, round_trip
from ..exceptions import InvalidInput
from ..sql.cursors import fetch_one, hot_cursor, run_query
from .topics import check_topic_name, declared_topics, is_declared

__all__ = ["stage"]

#: Longest ordering key and tenant of a message.
KEY_MAX = 200


@dataclass(frozen=True)
class StagedRow:
    """A message as the relay claimed it (the payload still JSON text, as stored)."""

    id: int
    topic: str
    key: str
    tenant: str
    payload: str
    created_at: datetime

    def envelope(self, **extra: int) -> str:
        """The JSON arguments of a job for this message (``extra``: more integer arguments).

        Built from the stored JSON text, not re-encoded: it was validated when staged (the
        relay builds 500 of these per batch, so plain strings skip the JSON encoder).
        """
        head = "".join(f'"{name}":{int(value)},' for name, value in extra.items())
        return (
            f'{{{head}"message_id":{self.id},"topic":{_json_string(self.topic)},'
            f'"key":{_json_string(self.key)},"tenant":{_json_string(self.tenant)},'
            f'"created_at":"{self.created_at.isoformat()}","payload":{self.payload}}}'
        )

    def arguments(self) -> dict[str, Any]:
        """The same arguments as Python values (for a declared concurrency key callable)."""
        arguments: dict[str, Any] = json.loads(self.envelope())
        return arguments


def _json_string(text: str) -> str:
    """``text`` as a JSON string; printable ASCII without quotes or backslashes as is."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return dumps(text)


def _check_text(what: str, value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or not value or len(value) > KEY_MAX:
        answered = (
            f"a string of {len(value)} characters"
            if isinstance(value, str)
            else f"a {type(value).__name__}"
        )
        raise InvalidInput(
            f"The outbox {what} must be None or a non-empty string of at most {KEY_MAX} "
            f"characters; got {answered}.",
            code=f"outbox-{what}-invalid",
        )
    return value


def _encode(topic_name: str, payload: Any) -> str:
    if not isinstance(payload, dict):
        raise InvalidInput(
            f"The payload of outbox topic {topic_name!r} must be a JSON object (a dict); got a "
            f"{type(payload).__name__}. Wrap the value: stage(topic, {{'value': ...}}).",
            code="outbox-payload-invalid",
        )
    text = round_trip(payload)
    if text is None:
        culprit = next((name for name, value in payload.items() if round_trip(value) is None), None)
        where = (
            f"field {culprit!r} is a {type(payload[culprit]).__name__}, which"
            if culprit is not None
            else "it"
        )
        raise InvalidInput(
            f"The payload of outbox topic {topic_name!r} does not round-trip through JSON: "
            f"{where} does not. Stage plain JSON values (str, int, float, bool, None, lists "
            "and dicts with string keys) such as ids, not objects.",
            code="outbox-payload-not-json",
        )
    size = len(text) if text.isascii() else len(text.encode())
    limit = settings.count("MAX_PAYLOAD_BYTES")
    if size > limit:
        raise InvalidInput(
            f"The payload of outbox topic {topic_name!r} is {size} bytes, over the {limit}-byte "
            "limit (LITEJOBS['MAX_PAYLOAD_BYTES']). Store the data in your tables and stage "
            "its id.",
            code="outbox-payload-too-large",
        )
    return text


def stage(
    topic: str, payload: dict[str, Any], key: str | None = None, *, tenant: str | None = None
) -> int:
    """Stage an event for the relay; answers the message id. Joins the caller's transaction.

    ``topic`` must be declared (``@subscriber`` or ``topic()``); ``payload`` is a JSON object
    of at most ``MAX_PAYLOAD_BYTES``; messages sharing ``key`` are published in the order they
    are staged (a keyed stage holds a lock on the key until the transaction ends, so two
    transactions staging one key take turns). ``tenant`` limits webhook delivery to the
    endpoints of that tenant and is the subscriber jobs' tenant. Everything is checked before
    anything is written; a refusal is ``InvalidInput`` with an ``outbox-…`` code.
    """
    check_topic_name(topic, InvalidInput)
    if not is_declared(topic):
        raise InvalidInput(
            f"No installed app declares the outbox topic {topic!r}. Declare it in a jobs.py "
            f"with @subscriber({topic!r}) or litejobs.outbox.topic({topic!r}); known topics: "
            f"{', '.join(t.name for t in declared_topics()) or 'none'}.",
            code="outbox-topic-unknown",
        )
    key_text = _check_text("key", key)
    tenant_text = _check_text("tenant", tenant)
    text = _encode(topic, payload)

    with hot_cursor(connections[settings.DATABASE]) as cursor:
        run_query(
            cursor,
            "outbox_stage",
            {
                "topic": topic,
                "key": key_text,
                "tenant": tenant_text,
                "payload": text,
                "now": clock.now(),
            },
        )
        staged: int = cast("dict[str, Any]", fetch_one(cursor))["id"]  # RETURNING the new row
        return staged
