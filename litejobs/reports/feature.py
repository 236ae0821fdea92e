"""How reports plug into litejobs (see ``litejobs.core.features``): their checks, the run job
and the expiry schedule, and every installed app's ``reports.py``."""

from ..core.features import Feature
from . import checks, declarations, jobs  # noqa: F401 - the checks and jobs register themselves

feature = Feature(
    "reports",
    verbs=f"{__package__}.cli",
    admin=f"{__package__}.admin",
    autodiscover=declarations.autodiscover,
)
