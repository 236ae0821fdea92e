"""How ingest pipelines plug into litejobs (see ``litejobs.core.features``): their checks,
the drain and import jobs, and every installed app's ``pipelines.py`` (after jobs)."""

from ..core.features import Feature
from . import checks, declarations, jobs  # noqa: F401 - the checks and jobs register themselves

feature = Feature("ingest", autodiscover=declarations.autodiscover)
