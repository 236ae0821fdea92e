"""A request's parameters, checked against the report and its limits before anything is
written: the range (``start`` and ``end``, dates or instants, no longer than ``max_range``; a
range of dates counts both its first and last day)
and the declared filters, each a single value that the query binds as data.

What is stored on a run is the JSON form (``stored``); what the query gets is the Python form
(``checked``): dates as ``date``, instants as aware ``datetime``.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from ..core.durations import format_duration
from ..models import ReportLimits
from .declarations import RANGE, Declaration
from .errors import ReportParamsInvalid

#: The longest text a filter value may be.
VALUE_MAX = 500


def checked(declaration: Declaration, limits: ReportLimits, params: Any) -> dict[str, Any]:
    """The request's parameters, or a ``ReportParamsInvalid`` naming the first refused."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ReportParamsInvalid(
            f"params is a dict such as {{'start': ..., 'end': ..., 'status': 'paid'}}; got "
            f"{type(params).__name__}.",
            code="report-param-invalid",
        )
    unknown = sorted(str(name) for name in params if name not in (*RANGE, *declaration.filters))
    if unknown:
        raise ReportParamsInvalid(
            f"Report {declaration.name!r} takes start, end and the filters "
            f"{list(declaration.filters)}; it does not know {unknown}.",
            code="report-param-unknown",
        )
    result = {name: _value(name, params[name]) for name in declaration.filters if name in params}
    result.update(_range(declaration, limits, params))
    return result


def stored(params: dict[str, Any]) -> dict[str, Any]:
    """The JSON form of checked parameters (dates and instants as ISO 8601 text)."""
    return {
        name: value.isoformat() if isinstance(value, date | datetime) else _json(value)
        for name, value in params.items()
    }


def restored(declaration: Declaration, params: dict[str, Any]) -> dict[str, Any]:
    """Checked parameters again, from their JSON form (the worker runs a stored run)."""
    result = {name: params[name] for name in declaration.filters if name in params}
    for name in RANGE:
        if name in params:
            result[name] = _when(name, params[name])
    return result


def widest(max_range: timedelta, now: datetime) -> dict[str, Any]:
    """The longest range ``max_range`` allows, ending now: whole days (both ends counted)
    when it is a day or more, else two instants."""
    if max_range >= timedelta(days=1):
        end = now.date()
        return {"start": end - timedelta(days=max_range.days - 1), "end": end}
    return {"start": now - max_range, "end": now}


def _json(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal) else value


def _value(name: str, value: Any) -> Any:
    allowed = isinstance(value, str | int | float | bool | Decimal | date) and value is not None
    text = isinstance(value, str)
    if not allowed or (text and (len(value) > VALUE_MAX or "\x00" in value)):
        raise ReportParamsInvalid(
            f"Filter {name!r} takes one text (at most {VALUE_MAX} characters, no NUL), number, "
            f"boolean or date; got {type(value).__name__}.",
            code="report-param-invalid",
        )
    return value


def _range(
    declaration: Declaration, limits: ReportLimits, params: dict[str, Any]
) -> dict[str, Any]:
    given = [name for name in RANGE if params.get(name) not in (None, "")]
    if limits.max_range is None and not given:
        return {}
    if len(given) < len(RANGE):
        raise ReportParamsInvalid(
            f"Report {declaration.name!r} reads a range: give both start and end (dates or "
            "instants).",
            code="report-range-missing",
        )
    start, end = (_when(name, params[name]) for name in RANGE)
    if type(start) is not type(end) or end < start:
        raise ReportParamsInvalid(
            f"start ({start}) and end ({end}) are two dates or two instants, start first.",
            code="report-range-invalid",
        )
    length = _length(start, end)
    if limits.max_range is not None and length > limits.max_range:
        raise ReportParamsInvalid(
            f"Report {declaration.name!r} reads at most {format_duration(limits.max_range)} "
            f"(its max_range limit); {start} to {end} is {format_duration(length)}. Ask for a "
            "shorter range.",
            code="report-range-too-long",
        )
    return {"start": start, "end": end}


def _length(start: date, end: date) -> timedelta:
    """How long a range is: between two instants (``datetime`` is a ``date``), or in whole
    days between two dates, both days counted (1 to 31 January is 31 days)."""
    if isinstance(start, datetime) and isinstance(end, datetime):
        return end - start
    return end - start + timedelta(days=1)


def _when(name: str, value: Any) -> date | datetime:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ReportParamsInvalid(
                f"{name} is a naive datetime; give an aware one (with its time zone).",
                code="report-range-invalid",
            )
        return value
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        return _parsed(name, value)
    raise ReportParamsInvalid(
        f"{name} is a date, an aware datetime or ISO 8601 text; got {type(value).__name__}.",
        code="report-range-invalid",
    )


def _parsed(name: str, text: str) -> date | datetime:
    try:
        parsed: date | datetime = (
            datetime.fromisoformat(text)
            if "T" in text or " " in text.strip()
            else date.fromisoformat(text)
        )
    except ValueError:
        raise ReportParamsInvalid(
            f"{name}={text[:40]!r} is not an ISO 8601 date (2026-01-31) or instant.",
            code="report-range-invalid",
        ) from None
    return _when(name, parsed)
