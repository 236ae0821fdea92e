"""Settle hooks' metric families (``Feature.metrics``; the metrics add-on serves them):

- ``litejobs_settle_hooks{state}``: the calls of settle hooks kept (within the job retention),
  by the state of the ``litejobs.settled`` job running each — ``done`` ran, ``dead`` failed
  every try, the live states are still to run or retrying;
- ``litejobs_settle_hook_failures``: the tries of a hook that raised (or timed out, or lost
  their worker), kept: each one is also logged as ``settle hook failed``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from ..conf import settings
from ..core.features import Family
from ..models import Job, JobAttempt
from ..models.hooks import SETTLED_JOB


def families(now: datetime) -> Iterator[Family]:
    """The settle hooks' calls by state, and their failed tries."""
    alias = settings.DATABASE
    calls = Family(
        "litejobs_settle_hooks",
        "Calls of settle hooks kept, by the state of the job running each.",
        ("state",),
    )
    calls.add_counts(Job.objects.using(alias).filter(name=SETTLED_JOB), "state")
    yield calls
    failed = JobAttempt.objects.using(alias).filter(job__name=SETTLED_JOB).count()
    yield Family(
        "litejobs_settle_hook_failures",
        "Tries of settle hooks that did not succeed (raised, timed out or lost their worker).",
        samples=[((), failed)],
    )
