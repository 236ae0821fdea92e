"""How fenced locks plug into litejobs (``litejobs.core.features``): their metrics, the purge
of keys no block held for a day, ``manage.py litejobs locks`` and the admin's locks page."""

from collections.abc import Callable, Mapping

from ..core.features import Feature
from . import metrics, retention


def purge(*, by: str, should_stop: Callable[[], bool]) -> Mapping[str, int]:
    """Housekeeping's step: the rows of keys no block held for a day."""
    return retention.purge(should_stop=should_stop)


feature = Feature(
    "locks",
    metrics=metrics.families,
    purges={"locks": purge},
    verbs=f"{__package__}.cli",
    admin=f"{__package__}.admin",
)
