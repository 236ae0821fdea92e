"""Staging: ``stage()`` an event with your business change; subscribers and webhook endpoints
receive it once the change has committed. Topics and subscribers are declared here.

```python
from litejobs.outbox import stage, subscriber, topic

topic("orders.refunded", description="An order was refunded.")   # a webhook-only topic
topic("orders.paid", sensitive=("card",))   # redacted wherever its messages show

@subscriber("orders.paid", queue="emails", retry=Retry(attempts=5))
def send_invoice(ctx, message):          # message: litejobs.outbox.Message
    invoices.send(message.payload["order_id"])

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

Topics are declared — by ``@subscriber`` or by ``topic()`` in an app's ``jobs.py`` — so a
misspelt topic is refused at ``stage()`` instead of being published to nobody.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from django.db import connections

from ..conf import settings
from ..core import clock
from ..core.payloads import REDACTED, dumps, redact
from ..core.registry import Registry
from ..exceptions import DeclarationError, InvalidInput, LitejobsError
from ..jobs import catalog
from ..jobs.context import JobContext
from ..jobs.declaration import JobDefinition
from ..jobs.enqueue import PreparedRow, common_columns, insert_many
from ..sql import fetch_all, fetch_one, hot_cursor, run_query

__all__ = [
    "Message",
    "SubscriberDefinition",
    "Topic",
    "carried_fields",
    "declared_topics",
    "hidden_fields",
    "is_declared",
    "shown_payload",
    "stage",
    "subscriber",
    "subscribers_of",
    "topic",
    "unregister_topic",
]

#: Lowercase words of letters, digits, ``_`` or ``-``, joined by dots: ``orders.paid``.
TOPIC_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$")
TOPIC_MAX = 200
#: Longest ordering key and tenant of a message.
KEY_MAX = 200
#: Room a job's envelope (message id, topic, key, tenant, time) takes beside the payload.
ENVELOPE_BYTES = 1024
#: The options ``@subscriber`` sets itself.
SUBSCRIBER_OWNS = ("key", "tenant")
#: The arguments of a subscriber's job: the message's envelope.
ENVELOPE = ("message_id", "topic", "key", "tenant", "created_at", "payload")


@dataclass(frozen=True)
class Topic:
    """A declared topic: ``stage()`` accepts it, endpoints may subscribe to it. Its
    ``sensitive`` payload fields are redacted wherever one of its messages shows."""

    name: str
    description: str = ""
    sensitive: tuple[str, ...] = ()


@dataclass(frozen=True)
class Message:
    """What a subscriber receives: the staged message as it was committed."""

    id: int
    topic: str
    key: str | None
    tenant: str | None
    payload: dict[str, Any]
    created_at: datetime


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
        return {
            "message_id": self.id,
            "topic": self.topic,
            "key": self.key,
            "tenant": self.tenant,
            "created_at": self.created_at.isoformat(),
            "payload": json.loads(self.payload),
        }


def _json_string(text: str) -> str:
    """``text`` as a JSON string; printable ASCII without quotes or backslashes as is."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return dumps(text)


# Declarations ------------------------------------------------------------------------------

#: Declared topics; a topic declared again keeps its first description.
_topics: Registry[Topic] = Registry("topic", origin=None)
#: Subscriber jobs by name, in declaration order (a subscriber declared again goes last).
_subscribers: Registry[SubscriberDefinition] = Registry("subscriber", origin=None)


def _check_topic_name(name: Any, error: type[LitejobsError]) -> str:
    if not isinstance(name, str) or len(name) > TOPIC_MAX or not TOPIC_PATTERN.match(name):
        shown = repr(name) if isinstance(name, str) else f"a {type(name).__name__}"
        raise error(
            f"{shown[:120]} is not a topic name. Use 1-{TOPIC_MAX} lowercase letters, digits, "
            "'_' or '-', in dot-separated words such as 'orders.paid'.",
            code="outbox-topic-invalid",
        )
    return name


def _check_fields(topic_name: str, sensitive: Any) -> tuple[str, ...]:
    listed = isinstance(sensitive, list | tuple | set | frozenset)
    fields = tuple(sensitive) if listed else ()
    wrong = [f for f in fields if not isinstance(f, str) or not f or "." in f]
    if not listed or wrong:
        culprit = ", ".join(map(repr, wrong)) if listed else repr(sensitive)[:80]
        raise DeclarationError(
            f"Topic {topic_name!r}: sensitive= takes a list or tuple of the names of the "
            f"payload's top-level fields, such as sensitive=('card',); got {culprit}.",
            code="outbox-sensitive-invalid",
        )
    return fields


def topic(name: str, *, description: str = "", sensitive: tuple[str, ...] = ()) -> Topic:
    """Declare a topic that ``stage()`` accepts and webhook endpoints may subscribe to.

    ``@subscriber`` declares its topic itself; declare here the topics only webhooks receive,
    and the ``sensitive`` fields of any topic's payloads (redacted on the message's admin page
    and in its subscriber and delivery jobs, and blanked out of their error texts). Declaring
    a name again is harmless: the first description wins, sensitive fields add up.
    """
    name = _check_topic_name(name, DeclarationError)
    fields = _check_fields(name, sensitive)
    existing = _topics.get(name) or Topic(name)
    _topics.register(
        name,
        Topic(
            name,
            existing.description or str(description),
            tuple(sorted({*existing.sensitive, *fields})),
        ),
    )
    return _topics[name]


def declared_topics() -> list[Topic]:
    """Every declared topic, by name."""
    return _topics.all()


def is_declared(name: str) -> bool:
    """Whether this process knows the topic (so the relay may publish it)."""
    return name in _topics


def subscribers_of(name: str) -> list[SubscriberDefinition]:
    """The subscriber jobs of a topic, in declaration order."""
    return [definition for definition in _subscribers.values() if definition.topic == name]


def hidden_fields(name: Any) -> tuple[str, ...] | None:
    """The payload fields of a message of topic ``name`` to hide wherever it shows; None: all
    of them (a subscriber declares the whole payload sensitive, or this process does not
    declare the topic, so nothing says which fields are safe)."""
    declared = _topics.get(name) if isinstance(name, str) else None
    if declared is None or any("payload" in s.sensitive for s in subscribers_of(name)):
        return None
    return declared.sensitive


def shown_payload(name: str, payload: Any) -> Any:
    """A message's payload as it may be shown: its topic's sensitive fields redacted."""
    fields = hidden_fields(name)
    if fields is None:
        return dict.fromkeys(payload, REDACTED) if isinstance(payload, dict) else REDACTED
    return redact(payload, fields)


def carried_fields(arguments: Any) -> tuple[str, ...]:
    """The fields to hide of a job's arguments that carry a message (a subscriber's, a webhook
    delivery's): its topic's sensitive ones inside ``payload``, or the whole ``payload``."""
    fields = hidden_fields(arguments.get("topic") if isinstance(arguments, dict) else None)
    return ("payload",) if fields is None else tuple(f"payload.{field}" for field in fields)


def unregister_topic(name: str) -> None:
    """Forget a topic and its subscribers (tests that declare on the fly)."""
    _topics.unregister(name)
    for definition in subscribers_of(name):
        _subscribers.unregister(definition.name)
        catalog.unregister(definition.name)


class SubscriberDefinition(JobDefinition):
    """A job declared with ``@subscriber(topic)``: one run per published message.

    Its key is ``outbox:<message id>`` (so a republished message never runs twice) and its
    tenant the message's. The body receives ``(ctx, message)``.
    """

    def __init__(self, handler: Callable[[Any, Message], Any], topic: str, **options: Any):
        self.topic = _check_topic_name(topic, DeclarationError)
        owned = sorted(set(SUBSCRIBER_OWNS) & options.keys())
        label = getattr(handler, "__qualname__", repr(handler))
        if owned:
            raise DeclarationError(
                f"Subscriber {label} of {topic!r}: {owned} are set by @subscriber (the key is "
                "the message id, the tenant the message's); remove them.",
                code="subscriber-invalid",
            )
        if not callable(handler) or not _takes_ctx_and_message(handler):
            raise DeclarationError(
                f"Subscriber {label} of {topic!r} must take (ctx, message): "
                "def on_event(ctx, message): ...",
                code="subscriber-invalid",
            )
        self.handler = handler
        fields = [f for f in options.get("sensitive", ()) if f not in ENVELOPE]
        if fields:
            raise DeclarationError(
                f"Subscriber {label} of {topic!r}: sensitive= names the job's arguments "
                f"({', '.join(ENVELOPE)}); {fields} are fields of the message: declare them "
                f"on its topic, litejobs.outbox.topic({topic!r}, sensitive={tuple(fields)!r}), "
                "or hide the whole message with sensitive=('payload',).",
                code="sensitive-invalid",
            )

        def envelope(
            ctx: JobContext,
            message_id: int,
            topic: str,
            key: str,
            tenant: str,
            created_at: str,
            payload: dict[str, Any],
        ) -> Any:
            message = Message(
                id=message_id,
                topic=topic,
                key=key or None,
                tenant=tenant or None,
                payload=payload,
                created_at=datetime.fromisoformat(created_at),
            )
            return handler(ctx, message)

        envelope.__module__ = handler.__module__
        envelope.__name__ = handler.__name__
        envelope.__qualname__ = handler.__qualname__
        super().__init__(
            envelope,
            key=lambda message_id: f"outbox:{message_id}",
            tenant=lambda tenant: tenant or None,
            **options,
        )
        self.__doc__ = handler.__doc__
        self.__wrapped__ = handler
        if self.topic not in _topics:
            _topics.register(self.topic, Topic(self.topic))
        _subscribers.unregister(self.name)
        _subscribers.register(self.name, self)
        catalog.redactions.register(self.name, carried_fields)

    def __repr__(self) -> str:
        return f"<subscriber {self.name} of {self.topic}>"

    def publish(self, messages: list[StagedRow], now: datetime) -> int:
        """Insert this subscriber's jobs for ``messages`` in the relay's transaction; answers
        how many it created (a message whose job is live already gets none).

        The jobs' arguments are built by the database from the stored messages; only a
        concurrency key derived by a callable of the arguments needs them here.
        """
        timing = (now, now)
        picker = self._concurrency_key
        if picker is not None:
            rows = [
                PreparedRow(
                    f"outbox:{message.id}",
                    message.tenant,
                    message.envelope(),
                    self._derived("concurrency key", picker, message.arguments(), max_length=200),
                )
                for message in messages
            ]
            answers = insert_many(self, rows, timing, self.priority)
            return sum(not answer.deduped for answer in answers)
        with hot_cursor(connections[settings.DATABASE]) as cursor:
            run_query(
                cursor,
                "outbox_subscriber_jobs",
                {
                    **common_columns(self, timing, self.priority),
                    "concurrency_key": self.name if isinstance(self.concurrency, int) else None,
                    "ids": [message.id for message in messages],
                },
            )
            return len(fetch_all(cursor))


def _takes_ctx_and_message(handler: Callable[..., Any]) -> bool:
    try:
        parameters = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in parameters if p.kind in positional and p.default is p.empty]
    takes = [p for p in parameters if p.kind in positional]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in parameters)
    return len(required) <= 2 and (len(takes) >= 2 or varargs)


def subscriber(topic: str, **options: Any) -> Callable[[Callable[..., Any]], SubscriberDefinition]:
    """Declare a job that runs once for every message published on ``topic``.

    ``@subscriber("orders.paid", queue=..., retry=..., timeout=..., priority=...,
    concurrency=..., atomic=..., sensitive=("payload",), dead_letter=..., name=...)``: the
    ``@job`` options except ``key`` and ``tenant``, which the message sets;
    ``sensitive=("payload",)`` hides the whole message wherever it shows (fields of it are
    declared on the topic: ``topic(name, sensitive=(...))``). The body takes
    ``(ctx, message)`` with ``message`` a ``litejobs.outbox.Message``. Declare subscribers in
    an app's ``jobs.py`` so every worker and relay process knows them.
    """

    def decorate(handler: Callable[..., Any]) -> SubscriberDefinition:
        return SubscriberDefinition(handler, topic, **options)

    return decorate


# Staging -----------------------------------------------------------------------------------


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
    try:
        text = dumps(payload)
        round_trips = json.loads(text) == payload
    except (TypeError, ValueError):
        round_trips = False
    if not round_trips:
        culprit = next((name for name, value in payload.items() if not _round_trips(value)), None)
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


def _round_trips(value: Any) -> bool:
    try:
        return json.loads(dumps(value)) == value and not isinstance(value, tuple)
    except (TypeError, ValueError):
        return False


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
    _check_topic_name(topic, InvalidInput)
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
