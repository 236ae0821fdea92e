"""Moved to ``litejobs.contrib.workqueues``: its ``commands`` (enqueue, claim, release,
resolve, ...), ``listing`` (pages, counts), ``retention`` (``purge``) and ``errors``; this path
keeps working and exports them all."""

from .contrib.workqueues import commands, errors, listing, retention
from .contrib.workqueues.commands import *  # noqa: F403
from .contrib.workqueues.errors import *  # noqa: F403
from .contrib.workqueues.listing import *  # noqa: F403
from .contrib.workqueues.retention import *  # noqa: F403

__all__ = [*commands.__all__, *errors.__all__, *listing.__all__, *retention.__all__]
