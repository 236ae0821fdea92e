"""How reports plug into litejobs (``litejobs.core.features``): importing this registers
their checks and declares the run job and the expiry schedule; ``feature`` says the rest."""

from ..core.features import Feature
from . import checks, declarations, jobs  # noqa: F401 - the checks and jobs register themselves

feature = Feature(
    "reports",
    verbs=f"{__package__}.cli",
    admin=f"{__package__}.admin",
    autodiscover=declarations.autodiscover,
)
