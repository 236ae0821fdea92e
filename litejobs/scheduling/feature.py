"""How schedules plug into litejobs (``litejobs.core.features``): importing this declares
litejobs' own schedules (housekeeping, the counters' rollup) and the rule that an occurrence's
job runs again only by a replay; ``feature`` says the rest."""

from collections.abc import Callable, Iterable, Mapping

from ..core.diagnostics import Problem
from ..core.features import Checkup, Feature
from . import (
    health,
    housekeeping,  # noqa: F401 - litejobs' own schedules register themselves
    metrics,
    operations,  # noqa: F401 - an occurrence's job reruns by replay only
    remedies,
    retention,
)

RUNBOOK = "a-schedule-did-not-run-overdue-schedule-no-scheduler"


def problems(checkup: Checkup) -> Iterable[Problem]:
    return health.problems(checkup.now)


def purge(*, by: str, should_stop: Callable[[], bool]) -> Mapping[str, int]:
    """Housekeeping's step: finished occurrences past their schedule's retention."""
    return retention.purge_occurrences(should_stop=should_stop)


feature = Feature(
    "scheduling",
    problems=problems,
    runbooks={"overdue-schedule": RUNBOOK, "no-scheduler": RUNBOOK},
    metrics=metrics.families,
    purges={"occurrences": purge},
    words=remedies.WORDS,
    verbs=f"{__package__}.cli",
    admin=f"{__package__}.admin",
)
