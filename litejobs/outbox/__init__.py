"""The transactional outbox: ``stage()`` an event with your business change; subscribers and
webhook endpoints receive it once the change has committed.

``declarations`` (``topic``, ``@subscriber``), ``staging`` (``stage``), ``topics`` (the
declared topics both check against), ``relay`` (``OutboxRelay``: publishes committed messages,
inside ``runworker`` or ``manage.py runrelay``) and ``operations`` (the backlog, retention,
what ``doctor`` finds). This package's face is the API of the first two.
"""

from . import declarations, staging
from .declarations import *  # noqa: F403 - the face of declarations
from .staging import *  # noqa: F403 - the face of staging
from .topics import Topic, declared_topics, is_declared

__all__ = [
    *declarations.__all__,
    *staging.__all__,
    "Topic",
    "declared_topics",
    "is_declared",
]
