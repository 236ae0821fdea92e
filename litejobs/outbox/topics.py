"""The declared topics: the names the outbox's messages carry.

Apps declare them with ``litejobs.outbox.topic()`` or ``@subscriber``; ``stage()`` accepts only
a declared topic, and a webhook endpoint subscribes only to declared ones (the
``WebhookEndpoint`` record, below the outbox, reads them through litejobs' app:
``LitejobsConfig.declared_topics``). Imports nothing but the core, so the outbox's
declarations import it before Django's apps are ready.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..core.errors import LitejobsError
from ..core.registry import Registry

#: Lowercase words of letters, digits, ``_`` or ``-``, joined by dots: ``orders.paid``.
TOPIC_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$")
TOPIC_MAX = 200


@dataclass(frozen=True)
class Topic:
    """A declared topic: ``stage()`` accepts it, endpoints may subscribe to it. Its
    ``sensitive`` payload fields are redacted wherever one of its messages shows."""

    name: str
    description: str = ""
    sensitive: tuple[str, ...] = ()


#: Declared topics by name (``litejobs.outbox.topic()`` and ``@subscriber`` declare them).
topics: Registry[Topic] = Registry("topic", origin=None)


def check_topic_name(name: Any, error: type[LitejobsError]) -> str:
    """``name`` when it is a topic name, else ``error`` (``outbox-topic-invalid``): a
    ``DeclarationError`` at import, an ``InvalidInput`` at run time."""
    if not isinstance(name, str) or len(name) > TOPIC_MAX or not TOPIC_PATTERN.match(name):
        shown = repr(name) if isinstance(name, str) else f"a {type(name).__name__}"
        raise error(
            f"{shown[:120]} is not a topic name. Use 1-{TOPIC_MAX} lowercase letters, digits, "
            "'_' or '-', in dot-separated words such as 'orders.paid'.",
            code="outbox-topic-invalid",
        )
    return name


def declared_topics() -> list[Topic]:
    """Every declared topic, by name."""
    return topics.all()


def is_declared(name: str) -> bool:
    """Whether this process knows the topic (so the relay may publish it)."""
    return name in topics
