"""A report's rows as SQL: the declared query's QuerySet, narrowed by the request's filters and
paged by primary key, compiled by Django with every value a bound parameter, then wrapped so
PostgreSQL writes each row's values the way the output needs them.

For CSV each value arrives as text; a text value starting with ``=``, ``+``, ``-``, ``@``, a
tab or a carriage return gets a leading ``'`` (a spreadsheet would run it as a formula)
unless its column is one of the report's ``formula_columns`` (``output`` escapes such a lead
after a semicolon or a tab inside a value, on the rare page that has one). Numbers, dates,
times, booleans and UUIDs are written as PostgreSQL writes them and never escaped (``-5.00``
stays a number).
For NDJSON each row arrives as one JSON object, keyed by the declared column names in their
declared order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import FieldError, ValidationError
from django.db.models import IntegerField, QuerySet, Value

from ..core.enums import PagingMode, ReportFormat
from ..sql.cursors import Cursor
from .declarations import Declaration
from .errors import ReportParamsInvalid, ReportRefused

#: The characters a spreadsheet reads as the start of a formula.
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")
#: PostgreSQL types whose text never starts a formula: integers, numerics, floats, booleans,
#: dates, times, timestamps and UUIDs (by type OID). Any other type is escaped as text.
PLAIN_TYPES = frozenset({16, 20, 21, 23, 26, 700, 701, 1082, 1083, 1114, 1184, 1266, 1700, 2950})
#: The name of the constant key of a report read in one query (``Paging.none``).
UNKEYED = "litejobs_no_key"
#: A text value with a formula's lead escaped. The lead is compared by its code (``ascii``:
#: one integer per value), not as a one-character text (``left``: a new text per value, then
#: six text comparisons): the page's query costs PostgreSQL a third less.
_ESCAPE = (
    "CASE WHEN ascii({value}::text) IN ({leads}) THEN '''' || {value}::text ELSE {value}::text END"
)
_LEAD_CODES = ", ".join(str(ord(lead)) for lead in FORMULA_LEADS)


@dataclass(frozen=True)
class Statement:
    """SQL and its bound parameters: rows of ``(key, value, ...)`` (CSV) or ``(key, json)``."""

    sql: str
    params: tuple[Any, ...]


def queryset(declaration: Declaration, params: dict[str, Any], tenant: str) -> QuerySet[Any]:
    """The declared query for these params and tenant, narrowed by each filter given
    (``queryset.filter(name=value)``: the value is data, never SQL)."""
    found = declaration.query(dict(params), tenant)
    if not isinstance(found, QuerySet):
        raise ReportRefused(
            f"Report {declaration.name!r}: query(params, tenant) answered "
            f"{type(found).__name__}, not a QuerySet.",
            code="report-query-invalid",
        )
    for name in declaration.filters:
        if name in params:
            found = _narrowed(declaration, found, name, params[name])
    return found


def _narrowed(
    declaration: Declaration, rows: QuerySet[Any], name: str, value: Any
) -> QuerySet[Any]:
    try:
        narrowed: QuerySet[Any] = rows.filter(**{name: value})
    except FieldError as error:
        raise ReportRefused(
            f"Report {declaration.name!r}: its filter {name!r} is no field or lookup of its "
            f"query ({error}).",
            code="report-query-invalid",
        ) from None
    except (ValueError, TypeError, ValidationError) as error:
        raise ReportParamsInvalid(
            f"Filter {name!r} does not take {str(value)[:40]!r}: {error}",
            code="report-param-invalid",
        ) from None
    return narrowed


def page(
    declaration: Declaration,
    rows: QuerySet[Any],
    *,
    after: Any = None,
    limit: int,
) -> QuerySet[Any]:
    """One page of ``rows`` as values: ``(key, *columns)``. Paged reports read in primary key
    order after ``after``; a report declared ``Paging.none`` keeps its query's own order and
    has no key (its query may group rows, which selecting the primary key would undo)."""
    paging = declaration.paging
    if paging is None or paging.mode is PagingMode.NONE:
        unkeyed = rows.annotate(**{UNKEYED: Value(None, output_field=IntegerField())})
        result: QuerySet[Any] = unkeyed.values_list(UNKEYED, *declaration.columns)[:limit]
        return result
    if after is not None:
        rows = rows.filter(pk__gt=after)
    return rows.order_by("pk").values_list("pk", *declaration.columns)[:limit]


def compile_values(rows: QuerySet[Any]) -> Statement:
    """The SQL Django writes for ``rows``, with its parameters apart."""
    sql, params = rows.query.sql_with_params()
    return Statement(sql, tuple(params))


def shaped(
    declaration: Declaration, inner: Statement, types: Sequence[int] | None = None
) -> Statement:
    """``inner`` (``key, *columns``) wrapped to answer each row as the output writes it:
    ``(key, text, ...)`` for CSV (``types``: the columns' type OIDs, from ``describe``) or
    ``(key, json)`` for NDJSON."""
    count = len(declaration.columns)
    aliases = ", ".join(["k", *(f"c{i}" for i in range(count))])
    if declaration.format is ReportFormat.NDJSON:
        # A key is typed: json_build_object takes any type, so PostgreSQL cannot infer one.
        pairs = ", ".join(f"%s::text, page.c{i}" for i in range(count))
        select = f"page.k, json_build_object({pairs})::text"
        # The keys' placeholders come first in the text, so their values do too.
        params = (*declaration.columns, *inner.params)
        return Statement(f"SELECT {select} FROM ({inner.sql}) AS page ({aliases})", params)
    oids = list(types or ()) + [None] * count
    values = ", ".join(_csv_value(declaration, i, oids[i]) for i in range(count))
    return Statement(
        f"SELECT page.k, {values} FROM ({inner.sql}) AS page ({aliases})", inner.params
    )


def bounded(declaration: Declaration, shaped_rows: Statement, room: int) -> Statement:
    """``shaped_rows`` cut where its values pass ``room`` bytes of UTF-8 (as PostgreSQL holds
    them): the rows that start within it, so at most one row more is handed over. Written,
    each value takes at least as many bytes (``output.room_for`` makes ``room`` so), so a
    page the cut shortened is past its bytes left once written.

    The values are counted as the output writes them (after escaping), below an
    ``OFFSET 0`` that keeps PostgreSQL from computing them twice."""
    count = 1 if declaration.format is ReportFormat.NDJSON else len(declaration.columns)
    names = [f"v{i}" for i in range(count)]
    size = " + ".join(f"coalesce(octet_length(out.{name}), 0)" for name in names)
    listed = ", ".join(f"sized.{name}" for name in names)
    # The window has no ORDER BY: it sums the rows in the order the page hands them over.
    sql = (
        f"SELECT sized.k, {listed} FROM (SELECT out.*, sum({size}) OVER (ROWS BETWEEN "
        "UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM "
        f"({shaped_rows.sql} OFFSET 0) AS out (k, {', '.join(names)})) AS sized "
        "WHERE coalesce(sized.before, 0) <= %s"
    )
    return Statement(sql, (*shaped_rows.params, room))


def _csv_value(declaration: Declaration, index: int, type_oid: int | None) -> str:
    value = f"page.c{index}"
    formula = declaration.columns[index] in declaration.formula_columns
    if formula or type_oid in PLAIN_TYPES:
        return f"{value}::text"
    return _ESCAPE.format(value=value, leads=_LEAD_CODES)


def describe(cursor: Cursor, inner: Statement) -> list[int]:
    """The type OIDs of ``inner``'s columns (after its key), read without reading a row."""
    cursor.execute(f"SELECT * FROM ({inner.sql}) AS page LIMIT 0", inner.params)
    return [column.type_code for column in cursor.description[1:]]


def estimate(cursor: Cursor, rows: QuerySet[Any]) -> int | None:
    """The planner's estimate of how many rows ``rows`` answers (no row is read)."""
    statement = compile_values(rows)
    cursor.execute(f"EXPLAIN (FORMAT JSON) {statement.sql}", statement.params)
    found = cursor.fetchone()
    plan: Any = found[0] if found else None  # the plan as JSON (its text, on Django's cursor)
    if isinstance(plan, str):
        plan = json.loads(plan)
    try:
        return int(plan[0]["Plan"]["Plan Rows"])
    except (TypeError, KeyError, IndexError, ValueError):
        return None
