"""How human work queues plug into litejobs (``litejobs.core.features``): importing this
registers their checks; ``feature`` says the rest (every installed app's ``queues.py`` is
imported after the jobs' and schedules' modules)."""

from ..core.features import Feature
from . import checks, declarations  # noqa: F401 - the checks register themselves

feature = Feature(
    "workqueues", admin=f"{__package__}.admin", autodiscover=declarations.autodiscover
)
