"""What a report is made of: its ``Limits``, its ``Paging``, its ``Audit`` and its ``Need``,
checked when it is declared, and the registry of declared reports.

A declaration that breaks a rule is refused with a ``DeclarationError`` whose code names the
rule; discovery keeps it for ``manage.py check``. A report without paging or audit, or with a
permission no model defines, is declared but reported by the checks (and refused when
requested) so every report of a project shows in one ``check`` run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..core.discovery import Discovery
from ..core.durations import format_duration, parse_duration
from ..core.enums import PagingMode, ReportFormat, values_of
from ..core.errors import DeclarationError, InvalidInput
from ..core.registry import Registry
from ..core.sizes import format_size, parse_size
from .errors import ReportNotFound

__all__ = ["RUN_JOB", "Audit", "Declaration", "Limits", "Need", "Paging", "reports"]

#: The job that runs a report in the worker (declared in ``litejobs.reports.jobs``).
RUN_JOB = "litejobs.report_run"
#: The longest report name: storage paths and job keys are made from it.
NAME_MAX = 100
#: The params that bound a report's range (``Limits.max_range`` applies to them).
RANGE = ("start", "end")
#: A report's name: dot-separated words of letters, digits, ``_`` and ``-`` (``shop.orders``).
#: It names storage directories, so no ``/``, no empty part and no ``..``.
NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")
#: The longest each duration limit may be: ``max_seconds`` within its run job's timeout (and
#: a page query's statement timeout), ``lifetime`` and ``max_range`` within reason and the
#: calendar.
DURATION_MOST = {
    "max_range": timedelta(days=3660),
    "max_seconds": timedelta(days=1),
    "lifetime": timedelta(days=30),
}
#: The largest count ``Need(volume=..., max_result=...)`` takes.
NEED_MOST = 10**12
#: The limits by their names in setting rows, admin pages and error codes.
LIMIT_NAMES = (
    "max_range",
    "max_rows",
    "max_seconds",
    "max_concurrent",
    "max_bytes",
    "lifetime",
)


def _invalid(message: str, code: str = "report-invalid") -> DeclarationError:
    return DeclarationError(message, code=code)


def _count(name: str, value: object, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
        raise _invalid(f"{name} is a whole number from 1 to {high:,}; got {value!r}.")
    return value


def _duration(name: str, value: object, most: timedelta | None = None) -> timedelta:
    try:
        found = parse_duration(value, name=name, allow_zero=False)
    except InvalidInput as error:
        raise _invalid(error.args[0]) from None
    if most is not None and found > most:
        raise _invalid(f"{name} is at most {format_duration(most)}; got {value!r}.")
    return found


@dataclass(frozen=True)
class _LimitsValues:
    """A report's limits, each as what it holds: ``Limits`` reads them as people write them,
    checks them, and keeps them here."""

    max_range: timedelta | None
    max_rows: int
    max_seconds: timedelta
    max_concurrent: int
    max_bytes: int
    lifetime: timedelta


class Limits(_LimitsValues):
    """The bounds of one report's cost, each stored as a setting row an operator may change:
    ``max_range`` (the longest ``end - start``; None: the report takes no range),
    ``max_rows``, ``max_seconds`` and ``max_bytes`` (a run past one is stopped and offers
    nothing), ``max_concurrent`` (runs of the report at once, across every worker) and
    ``lifetime`` (how long a finished output may be downloaded before it is removed). Each
    duration has its ceiling (``DURATION_MOST``)."""

    def __init__(
        self,
        max_range: timedelta | str | float | None = None,
        max_rows: int = 1_000_000,
        max_seconds: timedelta | str | float = "10m",
        max_concurrent: int = 2,
        max_bytes: int | str = "100MB",
        lifetime: timedelta | str | float = "1h",
    ) -> None:
        longest = None if max_range is None else _limit("max_range", max_range)
        seconds, kept = _limit("max_seconds", max_seconds), _limit("lifetime", lifetime)
        rows = _count("Limits(max_rows=...)", max_rows, 10**10)
        concurrent = _count("Limits(max_concurrent=...)", max_concurrent, 1000)
        try:
            size = parse_size(max_bytes, name="Limits(max_bytes=...)")
        except InvalidInput as error:
            raise _invalid(error.args[0]) from None
        super().__init__(longest, rows, seconds, concurrent, size, kept)

    def describe(self) -> dict[str, str]:
        """Each limit as people write it, by name."""
        return {
            "max_range": "-" if self.max_range is None else format_duration(self.max_range),
            "max_rows": f"{self.max_rows:,}",
            "max_seconds": format_duration(self.max_seconds),
            "max_concurrent": str(self.max_concurrent),
            "max_bytes": format_size(self.max_bytes),
            "lifetime": format_duration(self.lifetime),
        }


def _limit(name: str, value: object) -> timedelta:
    return _duration(f"Limits({name}=...)", value, DURATION_MOST[name])


@dataclass(frozen=True)
class Paging:
    """How an export reads its rows: ``Paging.pages(size=500)`` (a page at a time in primary
    key order, each page its own query and its own part of the output, so a run resumes at
    its last page) or ``Paging.none(reason="...")`` (one query for all rows, and why that is
    bounded)."""

    mode: PagingMode
    size: int = 0
    reason: str = ""

    @classmethod
    def pages(cls, *, size: int = 500) -> Paging:
        """Read ``size`` rows per page (1 to 50,000), in primary key order."""
        return cls(PagingMode.PAGES, size=_count("Paging.pages(size=...)", size, 50_000))

    @classmethod
    def none(cls, *, reason: str = "") -> Paging:
        """Read every row in one query; ``reason`` says why the result stays small."""
        if not isinstance(reason, str) or not reason.strip():
            raise _invalid(
                "Paging.none(reason=...) says why this export reads every row at once, such "
                "as reason='one row per day of at most 31 days'.",
                "report-paging-missing",
            )
        return cls(PagingMode.NONE, reason=reason)


@dataclass(frozen=True)
class Audit:
    """Why the bulk read is audited (``reason``) and what it reads (``target``): both land in
    the ``ReportAudit`` row each run writes."""

    reason: str
    target: str

    def __post_init__(self) -> None:
        for option in ("reason", "target"):
            value = getattr(self, option)
            if not isinstance(value, str) or not value.strip():
                raise _invalid(
                    f"Audit({option}=...) is a non-empty text, such as Audit(reason='monthly "
                    f"reconciliation', target='orders'); got {value!r}.",
                    "report-audit-missing",
                )


@dataclass(frozen=True)
class _NeedValues:
    """A report's need, each part as what it holds (``Need`` checks and keeps them)."""

    volume: int
    latency_target: timedelta
    max_result: int
    operator: str


class Need(_NeedValues):
    """The reporting need the report answers, recorded before it was built: a representative
    ``volume`` (rows it reads), the ``latency_target``, the ``max_result`` and the
    ``operator`` who answers for it."""

    def __init__(
        self, volume: int, latency_target: timedelta | str | float, max_result: int, operator: str
    ) -> None:
        _count("Need(volume=...)", volume, NEED_MOST)
        _count("Need(max_result=...)", max_result, NEED_MOST)
        latency = _duration("Need(latency_target=...)", latency_target)
        if not isinstance(operator, str) or not operator.strip():
            raise _invalid("Need(operator=...) names who answers for the report.")
        super().__init__(volume, latency, max_result, operator)


@dataclass(frozen=True, eq=False)
class Declaration:
    """A report as declared: ``litejobs.report`` checks its options and builds it."""

    name: str
    columns: tuple[str, ...]
    query: Callable[[dict[str, Any], str], Any]
    filters: tuple[str, ...]
    tenant: Callable[[Any], Any] | None
    format: ReportFormat
    encoding: str
    bom: bool
    limits: Limits
    request_budget: int
    paging: Paging | None
    audit: Audit | None
    permission: str | None
    formula_columns: tuple[str, ...]
    need: Need | None
    module: str

    @property
    def label(self) -> str:
        """The report's name as a file name: letters, digits, dots, dashes and underscores."""
        return "".join(c if c.isalnum() or c in "._-" else "_" for c in self.name)


# The groups of report()'s checks, in the order it reports problems ---------------------------


def _refused(report: str, message: str, code: str = "report-invalid") -> DeclarationError:
    return _invalid(f"Report {report!r}: {message}", code)


def check_names(
    name: str, columns: object, filters: object, formula_columns: object
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The report's name, then its columns, filters and formula columns as tuples of names."""
    _check_name(name)
    return (
        _names(name, "columns", columns, empty=False),
        _names(name, "filters", filters, empty=True),
        _names(name, "formula_columns", formula_columns, empty=True),
    )


def check_output(
    name: str, format: object, encoding: object, bom: object, request_budget: object
) -> ReportFormat:
    """How the output is written (its format, encoding and mark), and the request budget."""
    if format not in values_of(ReportFormat):
        raise _refused(
            name, f"format= is one of {', '.join(values_of(ReportFormat))}; got {format!r}."
        )
    _check_encoding(name, encoding, bom)
    _count("request_budget=", request_budget, 100_000)
    return ReportFormat(format)


def _check_encoding(name: str, encoding: object, bom: object) -> None:
    unknown = _refused(
        name,
        f"encoding= names a codec Python knows, such as 'utf-8' or 'cp1252'; got {encoding!r}.",
    )
    if not isinstance(encoding, str):
        raise unknown
    try:
        marked = "".encode(encoding)
    except LookupError:
        raise unknown from None
    if marked:
        raise _refused(
            name,
            f"encoding={encoding!r} writes a byte order mark of its own; name the byte order "
            "(such as 'utf-16-le') and pass bom=True for the mark.",
        )
    if not isinstance(bom, bool):
        raise _refused(name, "bom= is True (a byte order mark first, for spreadsheets) or False.")
    if bom and not _holds_bom(encoding):
        raise _refused(name, f"bom=True needs a Unicode encoding; {encoding} has no mark.")


def check_parts(
    name: str,
    *,
    query: object,
    tenant: object,
    limits: object,
    paging: object,
    audit: object,
    need: object,
    permission: object,
) -> None:
    """The functions it calls (``query``, ``tenant``), the parts it is made of, and the
    permission a requester needs."""
    if not callable(query):
        raise _refused(name, "query= is a function query(params, tenant) answering a QuerySet.")
    if tenant is not None and not callable(tenant):
        raise _refused(name, "tenant= is a function of the requesting user answering its tenant.")
    parts = (("limits", limits, Limits), ("paging", paging, Paging), ("audit", audit, Audit))
    for option, value, kind in (*parts, ("need", need, Need)):
        if value is not None and not isinstance(value, kind):
            raise _refused(name, f"{option}= is a {kind.__name__}(...); got {value!r}.")
    if permission is not None and (not isinstance(permission, str) or "." not in permission):
        raise _refused(
            name,
            f"permission= is 'app_label.codename', such as 'shop.export_order'; got "
            f"{permission!r}.",
            "report-permission-unknown",
        )


def check_columns(
    name: str, columns: tuple[str, ...], filters: tuple[str, ...], formulas: tuple[str, ...]
) -> None:
    """The formula columns are columns, and the filters leave the range to ``Limits``."""
    outside = sorted(set(formulas) - set(columns))
    if outside:
        raise _refused(name, f"formula_columns= names {outside}, which columns= does not list.")
    overlap = sorted(set(filters) & set(RANGE))
    if overlap:
        raise _refused(
            name,
            f"filters= names {overlap}: start and end are the report's range, bounded by "
            "Limits(max_range=...); name the other filters only.",
        )


def _holds_bom(encoding: str) -> bool:
    try:
        "\ufeff".encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def _check_name(name: object) -> None:
    if not isinstance(name, str) or len(name) > NAME_MAX or not NAME_PATTERN.fullmatch(name):
        raise _invalid(
            f"A report's name is at most {NAME_MAX} characters: words of letters, digits, _ "
            f"and - joined by dots, such as 'shop.orders' (it names storage directories); got "
            f"{name!r}."
        )


def _names(report: str, option: str, value: object, empty: bool) -> tuple[str, ...]:
    listed = tuple(value) if isinstance(value, list | tuple) else None
    valid = listed is not None and (empty or listed)
    if not valid or not all(isinstance(n, str) and n.isidentifier() for n in listed or ()):
        raise _refused(
            report, f"{option}= lists field names, such as ['number', 'amount']; got {value!r}."
        )
    names: tuple[str, ...] = listed or ()
    if len(set(names)) != len(names):
        raise _refused(report, f"{option}= names a field twice.")
    return names


def _duplicate(name: str, existing: Declaration, new: Declaration) -> DeclarationError:
    return _invalid(
        f"Two reports are named {name!r} ({existing.module} and {new.module}); rename one.",
        "report-duplicate",
    )


def _missing(name: str) -> ReportNotFound:
    return ReportNotFound(f"No installed app declares a report named {name!r} (in its reports.py).")


#: The declared reports by name.
reports: Registry[Declaration] = Registry("report", duplicate=_duplicate, missing=_missing)
#: Every installed app's ``reports.py``: ``autodiscover`` imports them, keeping refused
#: declarations, which ``declaration_errors`` answers as (module, error).
discovery = Discovery("reports")
autodiscover = discovery.run
declaration_errors = discovery.errors
