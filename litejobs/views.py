"""The path a URLconf names for the metrics endpoint:
``path("metrics", litejobs.views.metrics)`` (needs ``litejobs[metrics]``). The view lives in
``litejobs.metrics.views``."""

from .metrics.views import metrics

__all__ = ["metrics"]
