"""The path an app's ``queues.py`` imports its work-queue declarations from, as the first
release documented it: ``from litejobs.queues import work_queue, score_rule``. They live in
``litejobs.workqueues`` (which exports them too), the one home of human work queues."""

from .workqueues.declarations import *  # noqa: F403
from .workqueues.declarations import __all__  # noqa: F401
