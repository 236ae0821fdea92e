"""The outbox's declarations: ``topic()`` and ``@subscriber``, and how a topic's messages show.

```python
from litejobs.outbox import subscriber, topic

topic("orders.refunded", description="An order was refunded.")   # a webhook-only topic
topic("orders.paid", sensitive=("card",))   # redacted wherever its messages show

@subscriber("orders.paid", queue="emails", retry=Retry(attempts=5))
def send_invoice(ctx, message):          # message: litejobs.outbox.Message
    invoices.send(message.payload["order_id"])
```

Topics are declared — by ``@subscriber`` or by ``topic()`` in an app's ``jobs.py`` — so a
misspelt topic is refused at ``stage()`` instead of being published to nobody. A subscriber is
a job that runs once for every message published on its topic (keyed ``outbox:<message id>``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connections

from ..conf import settings
from ..core.payloads import REDACTED, redact
from ..core.registry import Registry
from ..exceptions import DeclarationError
from ..jobs import catalog
from ..jobs.context import JobContext
from ..jobs.declarations import JobDefinition
from ..jobs.enqueue import PreparedRow, common_columns, insert_many
from ..jobs.keys import subscriber_key
from ..sql.cursors import fetch_all, hot_cursor, run_query
from .staging import StagedRow
from .topics import Topic, check_topic_name, topics

__all__ = [
    "Message",
    "SubscriberDefinition",
    "carried_fields",
    "hidden_fields",
    "shown_payload",
    "subscriber",
    "subscribers_of",
    "topic",
    "unregister_topic",
]

#: The options ``@subscriber`` sets itself.
SUBSCRIBER_OWNS = ("key", "tenant")
#: The arguments of a subscriber's job: the message's envelope.
ENVELOPE = ("message_id", "topic", "key", "tenant", "created_at", "payload")


@dataclass(frozen=True)
class Message:
    """What a subscriber receives: the staged message as it was committed."""

    id: int
    topic: str
    key: str | None
    tenant: str | None
    payload: dict[str, Any]
    created_at: datetime


#: Subscriber jobs by name, in declaration order (a subscriber declared again goes last).
_subscribers: Registry[SubscriberDefinition] = Registry("subscriber", origin=None)


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
    name = check_topic_name(name, DeclarationError)
    fields = _check_fields(name, sensitive)
    existing = topics.get(name) or Topic(name)
    topics.register(
        name,
        Topic(
            name,
            existing.description or str(description),
            tuple(sorted({*existing.sensitive, *fields})),
        ),
    )
    return topics[name]


def subscribers_of(name: str) -> list[SubscriberDefinition]:
    """The subscriber jobs of a topic, in declaration order."""
    return [definition for definition in _subscribers.values() if definition.topic == name]


def hidden_fields(name: Any) -> tuple[str, ...] | None:
    """The payload fields of a message of topic ``name`` to hide wherever it shows; None: all
    of them (a subscriber declares the whole payload sensitive, or this process does not
    declare the topic, so nothing says which fields are safe)."""
    declared = topics.get(name) if isinstance(name, str) else None
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
    topics.unregister(name)
    for definition in subscribers_of(name):
        _subscribers.unregister(definition.name)
        catalog.unregister(definition.name)


class SubscriberDefinition(JobDefinition):
    """A job declared with ``@subscriber(topic)``: one run per published message.

    Its key is ``outbox:<message id>`` (so a republished message never runs twice) and its
    tenant the message's. The body receives ``(ctx, message)``.
    """

    def __init__(self, handler: Callable[[Any, Message], Any], topic: str, **options: Any):
        self.topic = check_topic_name(topic, DeclarationError)
        owned = sorted(set(SUBSCRIBER_OWNS) & options.keys())
        label = getattr(handler, "__qualname__", repr(handler))
        if owned:
            raise DeclarationError(
                f"Subscriber {label} of {topic!r}: {owned} are set by @subscriber (the key is "
                "the message id, the tenant the message's); remove them.",
                code="subscriber-invalid",
            )
        if options.get("debounce") is not None:
            raise DeclarationError(
                f"Subscriber {label} of {topic!r}: debounce= moves a job of a key not started "
                "yet, and each message is its own key; remove it.",
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
            key=subscriber_key,
            tenant=lambda tenant: tenant or None,
            **options,
        )
        self.__doc__ = handler.__doc__
        self.__wrapped__ = handler
        if self.topic not in topics:
            topics.register(self.topic, Topic(self.topic))
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
                    subscriber_key(message.id),
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
