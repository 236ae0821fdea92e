"""A report's query plan with representative parameters, for the review a report gets before
it ships (``manage.py litejobs report explain NAME``): the plan of its first read (the
request's, of up to ``request_budget + 1`` rows), without reading a row."""

from __future__ import annotations

from typing import Any

from ..conf import settings
from ..core import clock
from ..models import ReportAudit, ReportRun
from . import limits, params, requesting
from .declarations import RANGE, Declaration
from .errors import ReportParamsInvalid
from .reading import Pages

__all__ = ["check_tenant", "explain", "representative"]

#: The tenants a refused ``--tenant`` message names, at most.
TENANTS_NAMED = 5


def representative(declaration: Declaration) -> tuple[dict[str, Any], str]:
    """Parameters and a tenant like a real request's: the longest range the limits allow,
    ending now (whole days when the range is a day or more), and the tenant of the report's
    latest run."""
    row = limits.current(declaration)
    given: dict[str, Any] = {}
    if row.max_range is not None:
        given = params.widest(row.max_range, clock.now())
    latest = (
        ReportRun.objects.using(settings.DATABASE)
        .filter(report=declaration.name)
        .values_list("tenant", flat=True)
        .first()
    )
    return given, latest or ""


def explain(declaration: Declaration, given: dict[str, Any], tenant: str) -> list[str]:
    """The plan of the report's first read for ``given`` and ``tenant``, a line per node."""
    row = limits.current(declaration)
    checked = params.checked(declaration, row, given)
    pages = Pages(declaration, checked, tenant)
    with pages.session() as reader:
        statement = pages.statement(
            reader, after=None, limit=requesting.first_read(row), left=row.max_bytes
        )
        reader.execute(f"EXPLAIN {statement.sql}", statement.params)
        return [line for (line,) in reader.fetchall()]


def check_tenant(declaration: Declaration, given: dict[str, Any], tenant: str) -> None:
    """Refuse a tenant a plan would say nothing true about (``report-tenant-unknown``): any
    tenant of a report without ``tenant=`` (it reads for none), or one that no run or audit
    record of the report names and for which its query finds no row in the range asked for
    (a misspelt name plans an empty read)."""
    if declaration.tenant is None:
        if tenant:
            raise ReportParamsInvalid(
                f"Report {declaration.name!r} declares no tenant=: it reads the same rows for "
                f"everyone, so it has no tenant {tenant!r}. Leave --tenant out.",
                code="report-tenant-unknown",
            )
        return
    seen = _tenants_seen(declaration)
    if tenant in seen:
        return
    checked = params.checked(declaration, limits.current(declaration), given)
    in_range = {name: value for name, value in checked.items() if name in RANGE}
    if Pages(declaration, in_range, tenant).rows.exists():
        return
    named = ", ".join(sorted(seen)[:TENANTS_NAMED]) or "none yet"
    raise ReportParamsInvalid(
        f"Report {declaration.name!r} knows no tenant {tenant!r}: no run or audit record names "
        f"it, and its query finds no row for it in this range. Check the name (tenants its "
        f"runs name: {named}).",
        code="report-tenant-unknown",
    )


def _tenants_seen(declaration: Declaration) -> set[str]:
    alias = settings.DATABASE
    runs = ReportRun.objects.using(alias).filter(report=declaration.name)
    audits = ReportAudit.objects.using(alias).filter(report=declaration.name)
    found: set[str] = set()
    for rows in (runs, audits):
        found.update(rows.order_by().values_list("tenant", flat=True).distinct())
    return found
