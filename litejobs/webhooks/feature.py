"""How webhooks plug into litejobs (see ``litejobs.core.features``): the delivery job."""

from ..core.features import Feature
from . import delivery  # noqa: F401 - the webhook delivery job registers itself

feature = Feature("webhooks")
