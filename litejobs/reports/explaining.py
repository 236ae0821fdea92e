"""A report's query plan with representative parameters, for the review a report gets before
it ships (``manage.py litejobs report explain NAME``): the plan of its first read (the
request's, of up to ``request_budget + 1`` rows), without reading a row."""

from __future__ import annotations

from typing import Any

from ..conf import settings
from ..core import clock
from ..models import ReportRun
from . import limits, params, query
from .declarations import Declaration
from .reading import Pages

__all__ = ["explain", "representative"]


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
    first = query.page(declaration, pages.rows, after=None, limit=row.request_budget + 1)
    statement = query.shaped(declaration, query.compile_values(first))
    with pages.session() as reader:
        reader.execute(f"EXPLAIN {statement.sql}", statement.params)
        return [line for (line,) in reader.fetchall()]
