"""How batches and job dependencies plug into litejobs (``litejobs.core.features``): the placer
every enqueue hands its insert to, the hold-ups of the jobs they hold, their metrics, their
purge, their verbs and their admin page."""

from ..core.features import Feature
from ..jobs import placement
from . import holdups, metrics, retention
from .placing import BatchPlacer

placement.register(BatchPlacer())
holdups.register()

feature = Feature(
    "batches",
    metrics=metrics.families,
    purges={"batches": retention.purge},
    verbs=f"{__package__}.cli",
    admin=f"{__package__}.admin",
)
