"""Moved to ``litejobs.contrib.workqueues.consumers``; this path keeps working (needs
``litejobs[live]``)."""

from .contrib.workqueues.consumers import WorkQueueConsumer

__all__ = ["WorkQueueConsumer"]
