"""How schedules plug into litejobs (see ``litejobs.core.features``): litejobs' own schedules
(housekeeping, the counters' rollup) and the rule that an occurrence's job runs again only by
a replay."""

from ..core.features import Feature
from . import housekeeping, runbook  # noqa: F401 - they register themselves

feature = Feature("scheduling")
