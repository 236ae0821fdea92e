"""Moved to ``litejobs.contrib.metrics.views``; this path keeps working:
``path("metrics", litejobs.views.metrics)`` (needs ``litejobs[metrics]``)."""

from .contrib.metrics.views import metrics

__all__ = ["metrics"]
