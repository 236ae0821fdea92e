"""The transactional outbox: ``stage()`` an event with your business change; subscribers and
webhook endpoints receive it once the change has committed.

``staging`` (``stage``, ``@subscriber``, ``topic``: this package's public face), ``relay``
(``OutboxRelay``: publishes committed messages, inside ``runworker`` or ``manage.py
runrelay``) and ``operations`` (the backlog, retention, what ``doctor`` finds).
"""

from .staging import (
    Message,
    SubscriberDefinition,
    Topic,
    declared_topics,
    is_declared,
    stage,
    subscriber,
    subscribers_of,
    topic,
    unregister_topic,
)

__all__ = [
    "Message",
    "SubscriberDefinition",
    "Topic",
    "declared_topics",
    "is_declared",
    "stage",
    "subscriber",
    "subscribers_of",
    "topic",
    "unregister_topic",
]
