"""How settle hooks plug into litejobs (``litejobs.core.features``): importing this declares
the ``litejobs.settled`` job that runs them; ``feature`` adds their metrics."""

from ..core.features import Feature
from . import jobs, metrics  # noqa: F401 - the job registers itself

feature = Feature("hooks", metrics=metrics.families)
