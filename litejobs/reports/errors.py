"""The refusals of reports and exports, each with a stable ``code`` and a message naming the
fix. Each is a ``LitejobsError``; ``litejobs.reports`` exports them beside the API that
raises them."""

from ..core.errors import LitejobsError

__all__ = [
    "ReportDenied",
    "ReportNotFound",
    "ReportParamsInvalid",
    "ReportRefused",
    "ReportStopped",
]


class ReportNotFound(LitejobsError, LookupError):
    """No installed app declares a report by that name (in its ``reports.py``), or no run
    has that id."""

    code = "report-unknown"


class ReportParamsInvalid(LitejobsError, ValueError):
    """A request's parameters were refused before anything was written; ``code`` says why:
    ``report-range-too-long`` (``end - start`` over the report's ``max_range``),
    ``report-range-missing``, ``report-range-invalid``, ``report-param-unknown`` (a name the
    report does not declare as a filter), ``report-param-invalid`` (a value that is not a
    text, number, boolean or date), ``report-tenant-unknown`` (``report explain --tenant``
    naming a tenant the report knows nothing of)."""

    code = "report-param-invalid"


class ReportDenied(LitejobsError, PermissionError):
    """The user may not run or download this report: ``report-permission-denied`` (anonymous,
    or without the report's permission), ``report-tenant-unknown`` (the report's ``tenant=``
    found no tenant for the user)."""

    code = "report-permission-denied"


class ReportRefused(LitejobsError):
    """A report or run cannot do what was asked: ``report-declaration-incomplete`` (it
    declares no paging or no audit; ``manage.py check`` names it), ``report-not-cancellable``
    (the run has ended), ``report-not-ready`` (only a finished run's output is offered)."""

    code = "report-declaration-incomplete"


class ReportStopped(LitejobsError):
    """A run passed one of its limits and was stopped, its partial output removed, or an
    answer within the request budget would pass ``max_rows`` or ``max_bytes`` and was
    refused: ``code`` is ``report-max-rows``, ``report-max-bytes`` or
    ``report-max-seconds``."""

    code = "report-max-rows"
