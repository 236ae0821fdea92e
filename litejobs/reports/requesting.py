"""``report.request(user=..., params=...)``: who may ask, for which tenant, with which
parameters, and whether the answer fits the request.

Everything is checked before anything is written: the declaration is complete (paging and
audit), the user is signed in and holds the report's permission, its tenant is known, the
parameters fit the limits. Then the first ``request_budget + 1`` rows are read: at most the
budget, and the output itself is the answer; more, and a ``ReportRun`` is recorded with its
job (in one transaction) for the worker to write page by page.
"""

from __future__ import annotations

from typing import Any, cast

from django.db import transaction

from ..conf import settings
from ..core import clock
from ..jobs import catalog
from ..jobs.declarations import JobDefinition
from ..jobs.enqueue import insert_one
from ..models import ReportAudit, ReportLimits, ReportRun
from . import limits, output, params, storage
from .declarations import RUN_JOB, Declaration
from .errors import ReportDenied, ReportRefused
from .reading import Pages

__all__ = ["allowed", "request", "tenant_of"]

#: The outcome an audit row records for an output served within the request.
SERVED = "served"


def complete(declaration: Declaration) -> None:
    """Refuse a report declared without paging or audit (``manage.py check`` names it)."""
    missing = [name for name in ("paging", "audit") if getattr(declaration, name) is None]
    if missing:
        raise ReportRefused(
            f"Report {declaration.name!r} declares no {' and no '.join(missing)}; it does not "
            "run until it does (see manage.py check).",
            code="report-declaration-incomplete",
        )


def allowed(declaration: Declaration, user: Any) -> None:
    """Refuse an anonymous user or one without the report's permission."""
    if user is None or not getattr(user, "is_authenticated", False):
        raise ReportDenied(
            f"Report {declaration.name!r} is for signed-in users.",
            code="report-permission-denied",
        )
    if declaration.permission and not user.has_perm(declaration.permission):
        raise ReportDenied(
            f"Report {declaration.name!r} needs the permission {declaration.permission!r}, "
            f"which {user.get_username()!r} does not have.",
            code="report-permission-denied",
        )


def tenant_of(declaration: Declaration, user: Any) -> str:
    """The tenant whose rows the user reads ("" for a report without ``tenant=``)."""
    if declaration.tenant is None:
        return ""
    try:
        tenant = declaration.tenant(user)
    except Exception:
        tenant = None
    if tenant is None or str(tenant) == "" or len(str(tenant)) > 200:
        raise ReportDenied(
            f"Report {declaration.name!r}: its tenant= found no tenant for "
            f"{user.get_username()!r}, so it reads nothing for them.",
            code="report-tenant-unknown",
        )
    return str(tenant)


def request(declaration: Declaration, user: Any, given: Any) -> output.ReportOutput | ReportRun:
    """The output within the request budget, else a queued ``ReportRun``."""
    complete(declaration)
    allowed(declaration, user)
    tenant = tenant_of(declaration, user)
    row = limits.current(declaration)
    checked = params.checked(declaration, row, given)
    pages = Pages(declaration, checked, tenant)
    with pages.session() as reader:
        rows = pages.read(reader, after=None, limit=row.request_budget + 1)
    if len(rows) <= row.request_budget:
        return _served(declaration, user, tenant, checked, rows)
    with transaction.atomic(using=settings.DATABASE):  # the run, its job and its audit row
        return _queued(declaration, user, tenant, checked, row)


def filename(declaration: Declaration, suffix: str = "") -> str:
    """The output's file name: the report's, the date, and ``suffix``."""
    day = clock.now().date().isoformat()
    return f"{declaration.label}-{day}{suffix}.{output.extension(declaration)}"


def _served(
    declaration: Declaration, user: Any, tenant: str, checked: dict[str, Any], rows: list[Any]
) -> output.ReportOutput:
    content = output.head(declaration) + output.body(declaration, rows)
    audit(declaration, user, tenant, checked, row_count=len(rows), outcome=SERVED)
    return output.ReportOutput(
        content=content,
        content_type=output.content_type(declaration),
        filename=filename(declaration),
        row_count=len(rows),
    )


def _queued(
    declaration: Declaration,
    user: Any,
    tenant: str,
    checked: dict[str, Any],
    row: ReportLimits,
) -> ReportRun:
    run = ReportRun.objects.using(settings.DATABASE).create(
        report=declaration.name,
        parameters=params.stored(checked),
        requester=user,
        requester_name=user.get_username(),
        tenant=tenant,
        format=str(declaration.format),
        storage=settings.REPORT_STORAGE,
        created_at=clock.now(),
    )
    run.output_path = storage.directory(declaration.label, run.pk, tenant)
    run.job_id = _enqueue(run, row.max_concurrent)
    run.save(update_fields=["output_path", "job_id"])
    audit(declaration, user, tenant, checked, run=run, outcome=str(run.state))
    return run


class _Limited:
    """The run job with this report's ``max_concurrent`` as its concurrency limit: the job row
    carries the limit, and every worker's claim keeps to it."""

    def __init__(self, definition: JobDefinition, limit: int) -> None:
        self._definition = definition
        self.concurrency_limit = limit

    def __getattr__(self, name: str) -> Any:
        return getattr(self._definition, name)


def _enqueue(run: ReportRun, max_concurrent: int) -> int:
    definition = cast(JobDefinition, catalog.get(RUN_JOB))
    prepared = definition.prepare({"run_id": run.pk, "report": run.report})
    limited = cast(Any, _Limited(definition, max_concurrent))
    enqueued = insert_one(
        limited, prepared, definition.timing(None, None), definition.priority_for(None)
    )
    return enqueued.id


def audit(
    declaration: Declaration,
    user: Any,
    tenant: str,
    checked: dict[str, Any],
    *,
    outcome: str,
    row_count: int | None = None,
    run: ReportRun | None = None,
) -> ReportAudit:
    """Write the audit row of one read: who, why, what, with which parameters."""
    stated = declaration.audit  # complete() refused a report without one
    return ReportAudit.objects.using(settings.DATABASE).create(
        report=declaration.name,
        run=run,
        user=user,
        user_name=user.get_username(),
        tenant=tenant,
        reason=stated.reason if stated else "",
        target=stated.target if stated else "",
        parameters=params.stored(checked),
        row_count=row_count,
        outcome=outcome,
        at=clock.now(),
    )
