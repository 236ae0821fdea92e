"""What operators do to reports, from the admin or ``manage.py litejobs report``: cancel a run,
change a report's limits. Each change and its operator action log row (who, why, and for
limits each value's old and new) commit together or not at all; a refusal changes nothing and
leaves no row."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction

from ..conf import settings
from ..core import clock
from ..core.durations import format_duration
from ..core.enums import OperatorVerb
from ..jobs.actionlog import Actor, record
from ..models import ReportLimits, ReportRun
from .declarations import LIMIT_NAMES
from .errors import ReportRefused

__all__ = ["SETTINGS", "cancel", "change_limits"]

#: A report's setting row's values an operator changes.
SETTINGS = (*LIMIT_NAMES, "request_budget")


def cancel(run: ReportRun, actor: Actor) -> None:
    """Cancel a live run (its worker stops at its next page), logged; a run that has ended
    is refused (``report-not-cancellable``)."""
    with transaction.atomic(using=settings.DATABASE):
        if not run.cancel(by=actor.by):
            raise ReportRefused(
                f"Report run #{run.pk} of {run.report} has ended ({run.state}): there is "
                "nothing to cancel.",
                code="report-not-cancellable",
            )
        record(
            OperatorVerb.REPORT_CANCEL,
            actor,
            affected=1,
            job_ids=[run.job_id] if run.job_id is not None else [],
            filter={"run": run.pk, "report": run.report},
        )


def change_limits(row: ReportLimits, actor: Actor) -> dict[str, tuple[Any, Any]]:
    """Save ``row`` as the operator changed it, with who and when, and log each value that
    changed from its old to its new value; answers those changes (none: nothing is saved)."""
    with transaction.atomic(using=settings.DATABASE):
        stored = ReportLimits.objects.using(settings.DATABASE).select_for_update().get(pk=row.pk)
        changes = {
            name: (_shown(getattr(stored, name)), _shown(getattr(row, name)))
            for name in SETTINGS
            if getattr(stored, name) != getattr(row, name)
        }
        if not changes:
            return {}
        row.updated_by, row.updated_at = actor.by[:200], clock.now()
        row.save(using=settings.DATABASE)
        record(
            OperatorVerb.REPORT_LIMITS,
            actor,
            affected=1,
            filter={"report": row.report},
            change=changes,
        )
    return changes


def _shown(value: Any) -> Any:
    """A setting's value as the log keeps it: a duration as people write it."""
    return format_duration(value) if isinstance(value, timedelta) else value
