"""Moved to ``litejobs.contrib.bulk``; this path keeps working."""

from .contrib.bulk import *  # noqa: F403 - the face of litejobs.contrib.bulk
from .contrib.bulk import __all__  # noqa: F401
