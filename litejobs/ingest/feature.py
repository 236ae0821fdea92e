"""How ingest pipelines plug into litejobs (``litejobs.core.features``): importing this
registers their checks and declares the drain and import jobs; ``feature`` says the rest
(every installed app's ``pipelines.py`` is imported after the jobs' modules)."""

from collections.abc import Callable, Iterable, Mapping

from ..core.diagnostics import Problem
from ..core.features import Checkup, Feature
from . import (
    checks,  # noqa: F401 - the checks register themselves
    declarations,
    health,
    jobs,  # noqa: F401 - the drain and import jobs register themselves
    metrics,
    remedies,
    retention,
)

RUNBOOK = "an-ingest-pipeline-backs-up-ingest-backlog-ingest-over-capacity-ingest-import-stopped"


def problems(checkup: Checkup) -> Iterable[Problem]:
    return health.problems(now=checkup.now, max_age=checkup.max_ready_age)


def purge(*, by: str, should_stop: Callable[[], bool]) -> Mapping[str, int]:
    """Housekeeping's step: what pipelines keep past ``INGEST_RETENTION``."""
    return retention.purge(should_stop=should_stop)


feature = Feature(
    "ingest",
    problems=problems,
    runbooks={
        "ingest-backlog": RUNBOOK,
        "ingest-over-capacity": RUNBOOK,
        "ingest-import-stopped": RUNBOOK,
    },
    metrics=metrics.families,
    purges={"ingest": purge},
    words=remedies.WORDS,
    verbs=f"{__package__}.cli",
    admin=f"{__package__}.admin",
    autodiscover=declarations.autodiscover,
)
