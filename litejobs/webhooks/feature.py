"""How webhooks plug into litejobs (``litejobs.core.features``): importing this declares the
delivery job; ``feature`` says the rest."""

from collections.abc import Iterable

from ..core.diagnostics import Problem
from ..core.features import Checkup, Feature
from . import (
    delivery,  # noqa: F401 - the webhook delivery job registers itself
    endpoints,
    metrics,
    remedies,
)


def problems(checkup: Checkup) -> Iterable[Problem]:
    return endpoints.problems()


feature = Feature(
    "webhooks",
    problems=problems,
    runbooks={"webhook-disabled": "a-webhook-endpoint-was-disabled-webhook-disabled"},
    metrics=metrics.families,
    words=remedies.WORDS,
    admin=f"{__package__}.admin",
)
