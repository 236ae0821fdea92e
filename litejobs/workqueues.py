"""Moved to ``litejobs.contrib.workqueues.items``; this path keeps working."""

from .contrib.workqueues.items import *  # noqa: F403
from .contrib.workqueues.items import __all__  # noqa: F401
