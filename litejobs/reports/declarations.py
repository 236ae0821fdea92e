"""What a report is made of: its ``Limits``, its ``Paging``, its ``Audit`` and its ``Need``,
checked when it is declared, and the registry of declared reports.

A declaration that breaks a rule is refused with a ``DeclarationError`` whose code names the
rule; discovery keeps it for ``manage.py check``. A report without paging or audit, or with a
permission no model defines, is declared but reported by the checks (and refused when
requested) so every report of a project shows in one ``check`` run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
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


def _count(name: str, value: Any, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
        raise _invalid(f"{name} is a whole number from 1 to {high:,}; got {value!r}.")
    return value


def _duration(name: str, value: Any, most: timedelta | None = None) -> timedelta:
    try:
        found = parse_duration(value, name=name, allow_zero=False)
    except InvalidInput as error:
        raise _invalid(error.args[0]) from None
    if most is not None and found > most:
        raise _invalid(f"{name} is at most {format_duration(most)}; got {value!r}.")
    return found


@dataclass(frozen=True)
class Limits:
    """The bounds of one report's cost, each stored as a setting row an operator may change:
    ``max_range`` (the longest ``end - start``; None: the report takes no range),
    ``max_rows``, ``max_seconds`` and ``max_bytes`` (a run past one is stopped and offers
    nothing), ``max_concurrent`` (runs of the report at once, across every worker) and
    ``lifetime`` (how long a finished output may be downloaded before it is removed). Each
    duration has its ceiling (``DURATION_MOST``)."""

    max_range: timedelta | str | float | None = None
    max_rows: int = 1_000_000
    max_seconds: timedelta | str | float = "10m"
    max_concurrent: int = 2
    max_bytes: int | str = "100MB"
    lifetime: timedelta | str | float = "1h"

    def __post_init__(self) -> None:
        for name in DURATION_MOST:
            value = getattr(self, name)
            if value is not None or name != "max_range":
                checked = _duration(f"Limits({name}=...)", value, DURATION_MOST[name])
                object.__setattr__(self, name, checked)
        object.__setattr__(self, "max_rows", _count("Limits(max_rows=...)", self.max_rows, 10**10))
        object.__setattr__(
            self, "max_concurrent", _count("Limits(max_concurrent=...)", self.max_concurrent, 1000)
        )
        try:
            object.__setattr__(
                self, "max_bytes", parse_size(self.max_bytes, name="Limits(max_bytes=...)")
            )
        except InvalidInput as error:
            raise _invalid(error.args[0]) from None

    def describe(self) -> dict[str, str]:
        """Each limit as people write it, by name."""
        max_range = self.max_range
        return {
            "max_range": format_duration(max_range) if isinstance(max_range, timedelta) else "-",
            "max_rows": f"{self.max_rows:,}",
            "max_seconds": format_duration(self.max_seconds),  # type: ignore[arg-type]
            "max_concurrent": str(self.max_concurrent),
            "max_bytes": format_size(self.max_bytes),  # type: ignore[arg-type]
            "lifetime": format_duration(self.lifetime),  # type: ignore[arg-type]
        }


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
class Need:
    """The reporting need the report answers, recorded before it was built: a representative
    ``volume`` (rows it reads), the ``latency_target``, the ``max_result`` and the
    ``operator`` who answers for it."""

    volume: int
    latency_target: timedelta | str | float
    max_result: int
    operator: str

    def __post_init__(self) -> None:
        _count("Need(volume=...)", self.volume, NEED_MOST)
        _count("Need(max_result=...)", self.max_result, NEED_MOST)
        latency = _duration("Need(latency_target=...)", self.latency_target)
        object.__setattr__(self, "latency_target", latency)
        if not isinstance(self.operator, str) or not self.operator.strip():
            raise _invalid("Need(operator=...) names who answers for the report.")


@dataclass(eq=False)
class Declaration:
    """A report as declared: checked by ``__post_init__``; ``litejobs.report`` builds it."""

    name: str
    columns: tuple[str, ...]
    query: Callable[[dict[str, Any], str], Any]
    filters: tuple[str, ...] = ()
    tenant: Callable[[Any], Any] | None = None
    format: ReportFormat | str = ReportFormat.CSV
    encoding: str = "utf-8"
    bom: bool = False
    limits: Limits = field(default_factory=Limits)
    request_budget: int = 100
    paging: Paging | None = None
    audit: Audit | None = None
    permission: str | None = None
    formula_columns: tuple[str, ...] = ()
    need: Need | None = None
    module: str = ""

    def __post_init__(self) -> None:
        _check_name(self.name)
        self.columns = _names(self.name, "columns", self.columns, empty=False)
        self.filters = _names(self.name, "filters", self.filters, empty=True)
        self.formula_columns = _names(self.name, "formula_columns", self.formula_columns, True)
        self._check_options()
        self._check_types()
        outside = sorted(set(self.formula_columns) - set(self.columns))
        if outside:
            raise self._invalid(f"formula_columns= names {outside}, which columns= does not list.")
        overlap = sorted(set(self.filters) & set(RANGE))
        if overlap:
            raise self._invalid(
                f"filters= names {overlap}: start and end are the report's range, bounded by "
                "Limits(max_range=...); name the other filters only."
            )

    def _invalid(self, message: str, code: str = "report-invalid") -> DeclarationError:
        return _invalid(f"Report {self.name!r}: {message}", code)

    def _check_options(self) -> None:
        if self.format not in values_of(ReportFormat):
            raise self._invalid(
                f"format= is one of {', '.join(values_of(ReportFormat))}; got {self.format!r}."
            )
        self.format = ReportFormat(self.format)
        self._check_encoding()
        _count("request_budget=", self.request_budget, 100_000)

    def _check_encoding(self) -> None:
        try:
            marked = "".encode(self.encoding)
        except (LookupError, TypeError):
            raise self._invalid(
                f"encoding= names a codec Python knows, such as 'utf-8' or 'cp1252'; got "
                f"{self.encoding!r}."
            ) from None
        if marked:
            raise self._invalid(
                f"encoding={self.encoding!r} writes a byte order mark of its own; name the "
                "byte order (such as 'utf-16-le') and pass bom=True for the mark."
            )
        if not isinstance(self.bom, bool):
            raise self._invalid(
                "bom= is True (a byte order mark first, for spreadsheets) or False."
            )
        if self.bom and not _holds_bom(self.encoding):
            raise self._invalid(f"bom=True needs a Unicode encoding; {self.encoding} has no mark.")

    def _check_types(self) -> None:
        if not callable(self.query):
            raise self._invalid("query= is a function query(params, tenant) answering a QuerySet.")
        if self.tenant is not None and not callable(self.tenant):
            raise self._invalid(
                "tenant= is a function of the requesting user answering its tenant."
            )
        for option, kind in (("limits", Limits), ("paging", Paging), ("audit", Audit)):
            value = getattr(self, option)
            if value is not None and not isinstance(value, kind):
                raise self._invalid(f"{option}= is a {kind.__name__}(...); got {value!r}.")
        if self.need is not None and not isinstance(self.need, Need):
            raise self._invalid(f"need= is a Need(...); got {self.need!r}.")
        permission = self.permission
        if permission is not None and (not isinstance(permission, str) or "." not in permission):
            raise self._invalid(
                "permission= is 'app_label.codename', such as 'shop.export_order'; got "
                f"{permission!r}.",
                "report-permission-unknown",
            )

    @property
    def label(self) -> str:
        """The report's name as a file name: letters, digits, dots, dashes and underscores."""
        return "".join(c if c.isalnum() or c in "._-" else "_" for c in self.name)


def _holds_bom(encoding: str) -> bool:
    try:
        "\ufeff".encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or len(name) > NAME_MAX or not NAME_PATTERN.fullmatch(name):
        raise _invalid(
            f"A report's name is at most {NAME_MAX} characters: words of letters, digits, _ "
            f"and - joined by dots, such as 'shop.orders' (it names storage directories); got "
            f"{name!r}."
        )


def _names(report: str, option: str, value: Iterable[Any], empty: bool) -> tuple[str, ...]:
    listed = tuple(value) if isinstance(value, list | tuple) else None
    valid = listed is not None and (empty or listed)
    if not valid or not all(isinstance(n, str) and n.isidentifier() for n in listed or ()):
        raise _invalid(
            f"Report {report!r}: {option}= lists field names, such as ['number', 'amount']; "
            f"got {value!r}."
        )
    names = listed or ()
    if len(set(names)) != len(names):
        raise _invalid(f"Report {report!r}: {option}= names a field twice.")
    return names


def _duplicate(name: str, existing: Any, new: Any) -> DeclarationError:
    return _invalid(
        f"Two reports are named {name!r} ({existing.module} and {new.module}); rename one.",
        "report-duplicate",
    )


def _missing(name: str) -> ReportNotFound:
    return ReportNotFound(f"No installed app declares a report named {name!r} (in its reports.py).")


#: The declared reports by name.
reports: Registry[Any] = Registry("report", duplicate=_duplicate, missing=_missing)
discovery = Discovery("reports")


def autodiscover() -> None:
    """Import every installed app's ``reports.py``, keeping refused declarations."""
    discovery.run()


def declaration_errors() -> list[tuple[str, Exception]]:
    """The declarations autodiscovery refused, as (module, error)."""
    return discovery.errors()
