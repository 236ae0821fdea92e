"""The path of the litejobs view a project routes itself, one by one in its URLconf: the
metrics endpoint, ``path("metrics", litejobs.views.metrics)`` (needs ``litejobs[metrics]``,
so ``litejobs.urls``, which every project may include, does not route it). The view lives in
``litejobs.metrics.views``."""

from .metrics.views import metrics

__all__ = ["metrics"]
