"""How rate limits plug into litejobs (``litejobs.core.features``): their system checks,
metrics, the purge of idle buckets, the ``rates`` verb and the buckets' admin page."""

from collections.abc import Callable, Mapping

from ..core.features import Feature
from . import checks, metrics, windows  # noqa: F401 - the checks register themselves


def purge(*, by: str, should_stop: Callable[[], bool]) -> Mapping[str, int]:
    """Housekeeping's step: the buckets idle for an hour past their window."""
    return windows.purge(should_stop=should_stop)


feature = Feature(
    "rates",
    metrics=metrics.families,
    purges={"rates": purge},
    verbs=f"{__package__}.cli",
    admin=f"{__package__}.admin",
)
