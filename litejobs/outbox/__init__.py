"""The transactional outbox: ``stage()`` an event with your business change; subscribers and
webhook endpoints receive it once the change has committed.

``declarations`` (``topic``, ``@subscriber``), ``staging`` (``stage``), ``relay``
(``OutboxRelay``: publishes committed messages, inside ``runworker`` or ``manage.py
runrelay``) and ``operations`` (the backlog, retention, what ``doctor`` finds). The declared
topics themselves are kept in ``litejobs.core.topics``, below the records that validate
against them. This package's face is the API of the first two.
"""

from ..core.topics import Topic, declared_topics, is_declared
from . import declarations, staging
from .declarations import *  # noqa: F403 - the face of declarations
from .staging import *  # noqa: F403 - the face of staging

__all__ = [
    *declarations.__all__,
    *staging.__all__,
    "Topic",
    "declared_topics",
    "is_declared",
]
