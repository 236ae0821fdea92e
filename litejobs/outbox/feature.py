"""How the outbox plugs into litejobs (``litejobs.core.features``): ``feature`` says what it
contributes."""

from collections.abc import Iterable

from ..core.diagnostics import Problem
from ..core.features import Checkup, Feature
from . import metrics, operations, remedies


def problems(checkup: Checkup) -> Iterable[Problem]:
    return operations.problems(now=checkup.now, max_age=checkup.max_ready_age)


feature = Feature(
    "outbox",
    problems=problems,
    runbooks={"outbox-backlog": "the-outbox-backs-up-outbox-backlog"},
    metrics=metrics.families,
    purges={"outbox": operations.purge},
    words=remedies.WORDS,
    admin=f"{__package__}.admin",
)
