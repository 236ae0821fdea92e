"""The transactional outbox: ``stage()`` an event with your business change; subscribers and
webhook endpoints receive it once the change has committed.

``staging`` (``stage``, ``@subscriber``, ``topic``: this package's public face), ``relay``
(``OutboxRelay``: publishes committed messages, inside ``runworker`` or ``manage.py
runrelay``) and ``operations`` (the backlog, retention, what ``doctor`` finds).
"""

from .staging import *  # noqa: F403 - the face of staging
from .staging import __all__  # noqa: F401
