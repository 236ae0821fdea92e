"""Moved to ``litejobs.contrib.workqueues.declarations``; this path keeps working
(``from litejobs.queues import work_queue, score_rule`` in an app's ``queues.py``)."""

from .contrib.workqueues.declarations import *  # noqa: F403
from .contrib.workqueues.declarations import __all__  # noqa: F401
