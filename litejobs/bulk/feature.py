"""How bulk money actions plug into litejobs (``litejobs.core.features``): importing this
registers their checks and declares the job that pays each item; ``feature`` says the rest."""

from ..core.features import Feature
from . import checks, execution  # noqa: F401 - they register themselves

feature = Feature("bulk", admin=f"{__package__}.admin")
