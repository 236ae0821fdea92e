"""A report's rows read a page at a time, through a server-binding cursor: the page's SQL is
Django's (every value a bound parameter), shaped by ``query`` so PostgreSQL hands over each
row as the output writes it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import connections
from psycopg.rows import tuple_row

from ..conf import settings
from ..core.enums import ReportFormat
from ..sql.cursors import hot_cursor
from . import query
from .declarations import Declaration


def cursor() -> Any:
    """A cursor on litejobs' database answering tuples, for a report's pages."""
    return hot_cursor(connections[settings.DATABASE], rows=tuple_row)


class Pages:
    """The rows of one report for one set of parameters and one tenant."""

    def __init__(self, declaration: Declaration, params: dict[str, Any], tenant: str) -> None:
        self.declaration = declaration
        self.rows = query.queryset(declaration, params, tenant)
        self._types: list[int] | None = None

    def read(
        self, cursor: Any, *, after: Any, limit: int, timeout: timedelta | None = None
    ) -> list[tuple[Any, ...]]:
        """Up to ``limit`` rows after the key ``after``, each ``(key, ...)``; within the
        caller's transaction, the statement is cancelled past ``timeout``."""
        page = query.page(self.declaration, self.rows, after=after, limit=limit)
        inner = query.compile_values(page)
        if self._types is None and self.declaration.format is ReportFormat.CSV:
            self._types = query.describe(cursor, inner)
        statement = query.shaped(self.declaration, inner, self._types)
        if timeout is not None:
            milliseconds = max(int(timeout / timedelta(milliseconds=1)), 1)
            cursor.execute(
                "SELECT set_config('statement_timeout', %s, true)", (f"{milliseconds}ms",)
            )
        cursor.execute(statement.sql, statement.params)
        return list(cursor.fetchall())

    def estimate(self, cursor: Any) -> int | None:
        """The planner's estimate of the rows the report reads."""
        return query.estimate(cursor, self.rows)
