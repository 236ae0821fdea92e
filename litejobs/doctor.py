"""``manage.py litejobs doctor``: everything that needs an operator, from every feature.

Each feature answers its own problems as ``Problem`` values, and names the runbook section of
each code (its ``Feature.problems`` and ``runbooks``, in its ``feature.py``: see
``litejobs.core.features``). ``diagnose`` gathers them in the features' order, once the
database answers; notes are worth knowing, not wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .conf import settings
from .core import clock, features
from .core.diagnostics import Problem
from .core.features import Checkup
from .runtime.startup import database_checks

#: The runbook section (in docs/operating/runbooks.md) that says what to do about each code.
RUNBOOK_PAGE = "operating/runbooks/"
#: The runbook sections of doctor's own codes (each feature names those of its problems).
RUNBOOKS = {
    "database-unreachable": "the-database-restarts-or-is-unreachable",
    "migrations-unapplied": "deploying",
}
#: The database check ids (litejobs.E042, E043) as doctor's problem codes.
DATABASE_CODES = {"litejobs.E042": "database-unreachable", "litejobs.E043": "migrations-unapplied"}


def runbooks() -> dict[str, str]:
    """Every code ``doctor`` answers -> its section's anchor in docs/operating/runbooks.md."""
    found = dict(RUNBOOKS)
    for feature in features.installed():
        found.update(feature.runbooks)
    return found


def runbook(code: str) -> str:
    """Where the documentation says what to do about a problem ``code`` ("" if nowhere)."""
    anchor = runbooks().get(code)
    return f"{RUNBOOK_PAGE}#{anchor}" if anchor else ""


@dataclass(frozen=True)
class Diagnosis:
    """What ``doctor`` found: problems (unhealthy) and notes (worth knowing, not wrong)."""

    checked_at: datetime
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The notes as found, with their codes and what they concern (the dashboard words them).
    noted: list[Problem] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        """True when nothing needs an operator."""
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        """The diagnosis as plain JSON values."""
        return {
            "checked_at": self.checked_at.isoformat(),
            "healthy": self.healthy,
            "problems": [{**p.as_dict(), "runbook": runbook(p.code)} for p in self.problems],
            "notes": self.notes,
        }


def diagnose(*, max_ready_age: timedelta, now: datetime | None = None) -> Diagnosis:
    """Look for what needs an operator: every feature's problems, in the features' order,
    judged at ``now`` with ``max_ready_age`` as the longest wait of due work (a backlog
    beyond it). Leases are judged on the database's clock, as the workers judge them.

    First of all the database must answer (``database-unreachable``) with every litejobs
    migration applied (``migrations-unapplied``); when it does not, only that is reported.

    Paused queues and disabled schedules are not problems (an operator switched them off on
    purpose) but are noted with their reason, as a forgotten switch keeps work from running.
    """
    now = now or clock.now()
    unusable = database_problems()
    if unusable:
        return Diagnosis(now, unusable)
    checkup = Checkup(now, clock.database_now(settings.DATABASE), max_ready_age)
    found = [
        problem
        for feature in features.installed()
        if feature.problems is not None
        for problem in feature.problems(checkup)
    ]
    noted = [problem for problem in found if problem.is_note]
    return Diagnosis(
        now,
        [problem for problem in found if not problem.is_note],
        [problem.message for problem in noted],
        noted,
    )


def database_problems() -> list[Problem]:
    """The database cannot be used (``database-unreachable``) or litejobs' migrations are
    not all applied (``migrations-unapplied``): nothing else can be checked then."""
    found = []
    for message in database_checks(settings.DATABASE, waited=timedelta(0)):
        code = DATABASE_CODES.get(message.id or "")
        if code is not None:
            text = message.msg.split("] ", 1)[-1]
            found.append(Problem(code, f"{text} {message.hint or ''}".strip()))
    return found
