"""Reports and exports: a report too heavy for a request runs in the worker, streams to
tenant-scoped storage a page at a time, and is downloaded through a short-lived signed link
that checks who asks.

``declarations`` (``Limits``, ``Paging``, ``Audit``, ``Need``: what a report is made of),
``limits`` (its bounds as setting rows), ``params`` (a request's parameters checked),
``query`` and ``reading`` (its rows as bound SQL, a page at a time), ``output`` (CSV and
NDJSON bytes), ``storage`` (where outputs live), ``requesting`` (``report.request``),
``running`` (the worker's run), ``expiry`` (outputs removed after their lifetime),
``auditing`` (the append-only audit trail of reads), ``operations`` (operators' cancels and
limit changes, logged), ``explaining`` (plan review), ``views`` (the download) and
``reports`` (``report()`` and the ``Report`` it answers). This package's face is the API
users call.
"""

from .declarations import Audit, Limits, Need, Paging
from .errors import (
    ReportDenied,
    ReportNotFound,
    ReportParamsInvalid,
    ReportRefused,
    ReportStopped,
)
from .output import ReportOutput
from .reports import Report, report

__all__ = [
    "Audit",
    "Limits",
    "Need",
    "Paging",
    "Report",
    "ReportDenied",
    "ReportNotFound",
    "ReportOutput",
    "ReportParamsInvalid",
    "ReportRefused",
    "ReportStopped",
    "report",
]
