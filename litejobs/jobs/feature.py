"""How the job queue plugs into litejobs (``litejobs.core.features``): it comes first, so
every installed app's ``jobs.py``, ``workflows.py`` and ``schedules.py`` are imported before
any other feature's declarations, and ``doctor`` reports its jobs' and queues' problems first."""

from collections.abc import Iterable

from ..core.diagnostics import Problem
from ..core.features import Checkup, Feature
from . import catalog, health, metrics, queues, remedies, retention


def problems(checkup: Checkup) -> Iterable[Problem]:
    """The jobs' problems (``health.problems``), then the queues' (``queues.problems``)."""
    yield from health.problems(now=checkup.now, lease_now=checkup.lease_now)
    yield from queues.problems(
        now=checkup.now, lease_now=checkup.lease_now, max_ready_age=checkup.max_ready_age
    )


feature = Feature(
    "jobs",
    problems=problems,
    runbooks={
        "held-for-operator": "a-steps-outcome-is-unknown-held-for-operator",
        "dead-jobs": "dead-jobs",
        "lease-lapsed": "a-worker-was-killed-oom-sigkill-host-lost",
        "unknown-job": "deploying",
        "ready-backlog": "a-queue-is-backing-up",
        "no-worker": "a-queue-is-backing-up",
        "queue-paused": "stop-a-queue-during-an-incident",
    },
    metrics=metrics.families,
    purges={"jobs": retention.purge},
    words=remedies.WORDS,
    autodiscover=catalog.autodiscover,
)
