"""The audit trail of report reads (``ReportAudit``): one row per read, written once and never
changed (the table's triggers refuse an update or a delete, whoever asks).

A request writes ``served`` (answered within the request), ``queued`` (a run recorded) or
``refused`` (with the refusal's code, and a log line); a run's end writes its ending state
once, whichever attempt of its job settles it; each download writes ``downloaded``.
"""

from __future__ import annotations

import logging
from typing import Any

from ..conf import settings
from ..core import clock
from ..core.errors import LitejobsError
from ..models import ReportAudit, ReportRun
from .declarations import Declaration, reports

__all__ = ["DOWNLOADED", "REFUSED", "SERVED", "ended", "refused", "write"]

logger = logging.getLogger(__name__)

#: The outcome of an output answered within the request.
SERVED = "served"
#: The outcome of a download of a run's output.
DOWNLOADED = "downloaded"
#: The outcome of a request refused before anything was read or queued.
REFUSED = "refused"


def _person(user: Any) -> tuple[Any, str]:
    """The user to link and the name to keep (none for an anonymous user)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None, ""
    return user, user.get_username()


def write(
    declaration: Declaration,
    user: Any,
    tenant: str,
    parameters: dict[str, Any],
    *,
    outcome: str,
    row_count: int | None = None,
    run: ReportRun | None = None,
    code: str = "",
) -> ReportAudit:
    """Write the audit row of one read: who, why, what, with which parameters."""
    person, name = _person(user)
    stated = declaration.audit
    return ReportAudit.objects.using(settings.DATABASE).create(
        report=declaration.name,
        run=run,
        user=person,
        user_name=name,
        tenant=tenant,
        reason=stated.reason if stated else "",
        target=stated.target if stated else "",
        parameters=parameters,
        row_count=row_count,
        outcome=outcome,
        code=code,
        at=clock.now(),
    )


def refused(declaration: Declaration, user: Any, tenant: str, error: LitejobsError) -> None:
    """Log a refused request and write its audit row (its code; none of what was asked, which
    may be what was refused)."""
    _, name = _person(user)
    logger.warning(
        "Report request refused [%s]: report %s, user %s, tenant %s",
        error.code,
        declaration.name,
        name or "anonymous",
        tenant or "-",
    )
    write(declaration, user, tenant, {}, outcome=REFUSED, code=error.code)


def ended(run: ReportRun) -> None:
    """Write the run's ending row (its state, rows and stop code) unless one exists: a run
    ends once, and an attempt that finds it ended writes nothing new."""
    first = ReportAudit.objects.using(settings.DATABASE).filter(run=run).order_by("id").first()
    declaration = reports.get(run.report)
    stated = declaration.audit if declaration is not None else None
    row = ReportAudit(
        report=run.report,
        run=run,
        user_id=first.user_id if first else run.requester_id,
        user_name=first.user_name if first else run.requester_name,
        tenant=run.tenant,
        reason=first.reason if first else (stated.reason if stated else ""),
        target=first.target if first else (stated.target if stated else ""),
        parameters=run.parameters,
        row_count=run.row_count,
        outcome=run.state,
        code=run.stop_reason[:50],
        at=clock.now(),
    )
    # The partial unique index of endings makes a second one a no-op, even between two
    # attempts settling the run at once.
    ReportAudit.objects.using(settings.DATABASE).bulk_create([row], ignore_conflicts=True)
