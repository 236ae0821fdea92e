"""``manage.py litejobs doctor``: everything that needs an operator, from every feature.

Each feature answers its own ``problems(...)`` as ``Problem`` values — jobs (dead jobs, lapsed
leases, jobs no worker can run), queues (backlogs, queues no worker serves, paused queues),
schedules (overdue, no scheduler, disabled ones), the outbox (a backlog), webhooks
(endpoints litejobs disabled) and ingest pipelines (a backlog, a buffer over capacity, an
import whose job stopped). ``diagnose`` gathers them; notes are worth knowing, not wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .conf import settings
from .core import clock
from .core.diagnostics import Problem
from .ingest import health as ingest_health
from .jobs import operations as job_operations
from .jobs import queues
from .outbox import operations as outbox_operations
from .runtime.startup import database_checks
from .scheduling import health
from .webhooks import endpoints

#: The runbook section (in docs/operating/runbooks.md) that says what to do about each code.
RUNBOOK_PAGE = "operating/runbooks/"
RUNBOOKS = {
    "database-unreachable": "the-database-restarts-or-is-unreachable",
    "migrations-unapplied": "deploying",
    "held-for-operator": "a-steps-outcome-is-unknown-held-for-operator",
    "dead-jobs": "dead-jobs",
    "lease-lapsed": "a-worker-was-killed-oom-sigkill-host-lost",
    "unknown-job": "deploying",
    "ready-backlog": "a-queue-is-backing-up",
    "no-worker": "a-queue-is-backing-up",
    "queue-paused": "stop-a-queue-during-an-incident",
    "overdue-schedule": "a-schedule-did-not-run-overdue-schedule-no-scheduler",
    "no-scheduler": "a-schedule-did-not-run-overdue-schedule-no-scheduler",
    "outbox-backlog": "the-outbox-backs-up-outbox-backlog",
    "webhook-disabled": "a-webhook-endpoint-was-disabled-webhook-disabled",
    "ingest-backlog": "an-ingest-pipeline-backs-up-ingest-backlog-ingest-over-capacity-ingest-"
    "import-stopped",
}
RUNBOOKS["ingest-over-capacity"] = RUNBOOKS["ingest-import-stopped"] = RUNBOOKS["ingest-backlog"]
#: The database check ids (litejobs.E042, E043) as doctor's problem codes.
DATABASE_CODES = {"litejobs.E042": "database-unreachable", "litejobs.E043": "migrations-unapplied"}


def runbook(code: str) -> str:
    """Where the documentation says what to do about a problem ``code`` ("" if nowhere)."""
    anchor = RUNBOOKS.get(code)
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
    """Look for what needs an operator: jobs held for an operator (``held-for-operator``),
        recent dead jobs, lapsed leases, backlogs, no worker,
        jobs waiting for a worker whose code can run them (``unknown-job``), overdue schedules
        (``overdue-schedule``), active schedules no scheduler plans (``no-scheduler``), an outbox
        backlog older than ``max_ready_age`` (``outbox-backlog``) and webhook endpoints litejobs
        disabled after failures (``webhook-disabled``), an ingest buffer that waits too long or
    holds more than its capacity (``ingest-backlog``, ``ingest-over-capacity``) and a stopped
    file import (``ingest-import-stopped``). Leases are judged on the database's clock,
        as the workers judge them.

        First of all the database must answer (``database-unreachable``) with every litejobs
        migration applied (``migrations-unapplied``); when it does not, only that is reported.

        Paused queues and disabled schedules are not problems (an operator switched them off on
        purpose) but are noted with their reason, as a forgotten switch keeps work from running.
    """
    now = now or clock.now()
    unusable = database_problems()
    if unusable:
        return Diagnosis(now, unusable)
    lease_now = clock.database_now(settings.DATABASE)
    found = [
        *job_operations.problems(now=now, lease_now=lease_now),
        *queues.problems(now=now, lease_now=lease_now, max_ready_age=max_ready_age),
        *health.problems(now),
        *outbox_operations.problems(now=now, max_age=max_ready_age),
        *endpoints.problems(),
        *ingest_health.problems(now=now, max_age=max_ready_age),
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
