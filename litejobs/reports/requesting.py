"""``report.request(user=..., params=...)``: who may ask, for which tenant, with which
parameters, and whether the answer fits the request.

Everything is checked before anything is written: the declaration is complete (paging and
audit), the user is signed in and holds the report's permission, its tenant is known, the
parameters fit the limits. Then the first ``request_budget + 1`` rows are read (no more than
``max_rows + 1``, cut where they pass ``max_bytes``): at most the budget, and the output
itself is the answer, within ``max_rows`` and ``max_bytes`` as a run's would be; more, and a
``ReportRun`` is recorded with its job (in one transaction) for the worker to write page by
page. A refusal leaves its audit row and a log line, and nothing else.
"""

from __future__ import annotations

from typing import Any, cast

from django.db import transaction

from ..conf import settings
from ..core import clock
from ..core.errors import LitejobsError
from ..jobs import catalog
from ..jobs.declarations import JobDefinition
from ..jobs.enqueue import insert_one
from ..models import ReportLimits, ReportRun
from . import auditing, limits, output, params, storage
from .declarations import RUN_JOB, Declaration
from .errors import ReportDenied, ReportRefused, ReportStopped
from .reading import Pages

__all__ = ["allowed", "first_read", "request", "tenant_of"]


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
    """The output within the request budget, else a queued ``ReportRun``; a refusal is
    audited and logged, then raised."""
    try:
        return _answer(declaration, user, given)
    except LitejobsError as refusal:
        auditing.refused(declaration, user, _tenant_if_known(declaration, user), refusal)
        raise


def first_read(row: ReportLimits) -> int:
    """The rows a request reads: one past its budget (a larger result is a run), and never
    more than one past ``max_rows`` (past it, a run would be stopped)."""
    return min(row.request_budget, row.max_rows) + 1


def _answer(declaration: Declaration, user: Any, given: Any) -> output.ReportOutput | ReportRun:
    complete(declaration)
    allowed(declaration, user)
    tenant = tenant_of(declaration, user)
    row = limits.current(declaration)
    checked = params.checked(declaration, row, given)
    pages = Pages(declaration, checked, tenant)
    head = output.head(declaration)
    with pages.session() as reader:
        rows = pages.read(reader, after=None, limit=first_read(row), left=row.max_bytes - len(head))
    if len(rows) > row.max_rows:
        raise _over(declaration, row, "report-max-rows")
    if len(rows) > row.request_budget:
        with transaction.atomic(using=settings.DATABASE):  # the run, its job and its audit row
            return _queued(declaration, user, tenant, checked, row)
    content = head + output.body(declaration, rows)
    if len(content) > row.max_bytes:
        raise _over(declaration, row, "report-max-bytes")
    return _served(declaration, user, tenant, checked, content, len(rows))


def _over(declaration: Declaration, row: ReportLimits, code: str) -> ReportStopped:
    what = {
        "report-max-rows": f"more than {row.max_rows:,} rows (max_rows)",
        "report-max-bytes": f"more than {row.max_bytes:,} bytes (max_bytes)",
    }[code]
    return ReportStopped(
        f"Report {declaration.name!r} would answer {what}, which its limits refuse. Narrow the "
        "parameters, or raise the limit in the report's limits.",
        code=code,
    )


def _tenant_if_known(declaration: Declaration, user: Any) -> str:
    """The user's tenant for a refusal's audit row, or "" when it cannot be told."""
    if user is None or not getattr(user, "is_authenticated", False):
        return ""
    try:
        return tenant_of(declaration, user)
    except ReportDenied:
        return ""


def filename(declaration: Declaration, suffix: str = "") -> str:
    """The output's file name: the report's, the date, and ``suffix``."""
    day = clock.now().date().isoformat()
    return f"{declaration.label}-{day}{suffix}.{output.extension(declaration)}"


def _served(
    declaration: Declaration,
    user: Any,
    tenant: str,
    checked: dict[str, Any],
    content: bytes,
    row_count: int,
) -> output.ReportOutput:
    auditing.write(
        declaration,
        user,
        tenant,
        params.stored(checked),
        row_count=row_count,
        outcome=auditing.SERVED,
    )
    return output.ReportOutput(
        content=content,
        content_type=output.content_type(declaration),
        filename=filename(declaration),
        row_count=row_count,
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
    auditing.write(declaration, user, tenant, run.parameters, run=run, outcome=str(run.state))
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
