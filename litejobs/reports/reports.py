"""``report()``: declare a report in an app's ``reports.py``; the ``Report`` it answers is
how a view or the admin requests it.

```python
orders = report("shop.orders", columns=["number", "customer", "amount", "status"],
                query=lambda params, tenant: Order.objects.filter(
                    shop__tenant=tenant, placed__range=(params["start"], params["end"])),
                filters=["status"], tenant=lambda user: user.member.tenant,
                limits=Limits(max_range="31d", max_rows=100_000, max_seconds="5m",
                              max_concurrent=2, max_bytes="50MB", lifetime="1h"),
                request_budget=100, paging=Paging.pages(size=500),
                audit=Audit(reason="monthly reconciliation", target="orders"),
                permission="shop.export_order",
                need=Need(volume=2_000_000, latency_target="2m", max_result=100_000,
                          operator="finance ops"))

answer = orders.request(user=request.user, params={"start": d1, "end": d2, "status": "paid"})
# within the request budget: a ReportOutput (answer.response() downloads it);
# over it: a ReportRun the worker writes (answer.download_url() once it is done).
```
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..core.spelling import unknown_option
from .declarations import (
    Audit,
    Declaration,
    Limits,
    Need,
    Paging,
    check_columns,
    check_names,
    check_output,
    check_parts,
    reports,
)
from .output import ReportOutput

if TYPE_CHECKING:
    from ..models import ReportRun

__all__ = ["Report", "report"]


class Report(Declaration):
    """A declared report (see ``report()``)."""

    def __repr__(self) -> str:
        return f"<Report {self.name}>"

    def request(
        self, *, user: Any, params: dict[str, Any] | None = None
    ) -> ReportOutput | ReportRun:
        """Check the user and the parameters against the report and its limits, then answer
        the output itself when it fits the request budget, else a queued ``ReportRun``.
        Refusals (``ReportDenied``, ``ReportParamsInvalid``, ``ReportRefused``) write
        nothing."""
        from .requesting import request  # reads the models: not while litejobs is imported

        return request(self, user, params)


def report(
    name: str,
    *,
    columns: Iterable[str],
    query: Callable[[dict[str, Any], str], Any],
    filters: Iterable[str] = (),
    tenant: Callable[[Any], Any] | None = None,
    format: str = "csv",
    encoding: str = "utf-8",
    bom: bool = False,
    limits: Limits | None = None,
    request_budget: int = 100,
    paging: Paging | None = None,
    audit: Audit | None = None,
    permission: str | None = None,
    formula_columns: Iterable[str] = (),
    need: Need | None = None,
    **unknown: Any,
) -> Report:
    """Declare a report: its columns (the output's columns, in this order), its query
    (``query(params, tenant)`` answering a QuerySet of the tenant's rows in the range), the
    filters a request may give (applied as ``queryset.filter(name=value)``), who may run it
    (``permission``, ``tenant``), its bounds (``limits``, ``request_budget``), how it reads
    (``paging``), why it is audited (``audit``) and the need it answers (``need``). An option
    of another name (a typo) is refused (``option-unknown``), naming the one it likely means."""
    if unknown:
        raise unknown_option(f"Report {name!r}", next(iter(unknown)), REPORT_OPTIONS, "report()")
    listed, filtered, formulas = check_names(name, columns, filters, formula_columns)
    shape = check_output(name, format, encoding, bom, request_budget)
    limits = Limits() if limits is None else limits
    check_parts(
        name,
        query=query,
        tenant=tenant,
        limits=limits,
        paging=paging,
        audit=audit,
        need=need,
        permission=permission,
    )
    check_columns(name, listed, filtered, formulas)
    declared = Report(
        name=name,
        columns=listed,
        query=query,
        filters=filtered,
        tenant=tenant,
        format=shape,
        encoding=encoding,
        bom=bom,
        limits=limits,
        request_budget=request_budget,
        paging=paging,
        audit=audit,
        permission=permission,
        formula_columns=formulas,
        need=need,
        module=str(sys._getframe(1).f_globals.get("__name__", "")),
    )
    reports.register(name, declared)
    return declared


#: The options ``report()`` takes, after the name.
REPORT_OPTIONS = tuple(inspect.signature(report).parameters)[1:-1]
