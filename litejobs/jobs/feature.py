"""How the job queue plugs into litejobs (see ``litejobs.core.features``): every installed
app's ``jobs.py``, ``workflows.py`` and ``schedules.py`` are imported first."""

from ..core.features import Feature
from . import catalog

feature = Feature("jobs", autodiscover=catalog.autodiscover)
