"""How bulk money actions plug into litejobs (see ``litejobs.core.features``): their checks,
the job that pays each item, and their admin pages."""

from ..core.features import Feature
from . import checks, execution  # noqa: F401 - they register themselves

feature = Feature("bulk", admin=f"{__package__}.admin")
