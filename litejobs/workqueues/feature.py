"""How human work queues plug into litejobs (see ``litejobs.core.features``): their checks,
their admin pages, and every installed app's ``queues.py`` (after jobs and schedules)."""

from ..core.features import Feature
from . import checks, declarations  # noqa: F401 - the checks register themselves

feature = Feature(
    "workqueues", admin=f"{__package__}.admin", autodiscover=declarations.autodiscover
)
