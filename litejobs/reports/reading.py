"""A report's rows read a page at a time, through a server-binding cursor: the page's SQL is
Django's (every value a bound parameter), shaped by ``query`` so PostgreSQL hands over each
row as the output writes it, and cut by PostgreSQL where the output's bytes left run out
(``max_bytes`` holds while a page is read, not once it is in memory). A worker's run reads
each page ahead (``ReadAhead``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.db import connections, transaction
from psycopg.rows import tuple_row

from ..core.enums import ReportFormat
from ..sql.cursors import Cursor, HotCursor, hot_cursor
from . import output, query
from .declarations import Declaration


def cursor(alias: str) -> HotCursor:
    """A cursor on the database ``alias`` answering tuples, for a report's pages."""
    return hot_cursor(connections[alias], rows=tuple_row)


class Pages:
    """The rows of one report for one set of parameters and one tenant."""

    def __init__(self, declaration: Declaration, params: dict[str, Any], tenant: str) -> None:
        self.declaration = declaration
        self.rows = query.queryset(declaration, params, tenant)
        #: The database the report's query reads (its QuerySet's, not litejobs' own).
        self.alias: str = self.rows.db
        self._types: list[int] | None = None

    @contextmanager
    def session(self) -> Iterator[Cursor]:
        """A transaction and a cursor on the database the report's query reads."""
        with transaction.atomic(using=self.alias), cursor(self.alias) as reader:
            yield reader

    def read(
        self,
        cursor: Cursor,
        *,
        after: Any,
        limit: int,
        left: int,
        timeout: timedelta | None = None,
    ) -> list[tuple[Any, ...]]:
        """Up to ``limit`` rows after the key ``after``, each ``(key, ...)``, cut after the
        first row that takes the output past ``left`` bytes (so the cut page, once written,
        is over them); within the caller's transaction, the statement is cancelled past
        ``timeout``."""
        statement = self.statement(cursor, after=after, limit=limit, left=left)
        if timeout is not None:
            milliseconds = max(int(timeout / timedelta(milliseconds=1)), 1)
            cursor.execute(
                "SELECT set_config('statement_timeout', %s, true)", (f"{milliseconds}ms",)
            )
        cursor.execute(statement.sql, statement.params)
        return list(cursor.fetchall())

    def statement(self, cursor: Cursor, *, after: Any, limit: int, left: int) -> query.Statement:
        """The SQL of a page (``read``), as PostgreSQL runs and plans it."""
        page = query.page(self.declaration, self.rows, after=after, limit=limit)
        inner = query.compile_values(page)
        if self._types is None and self.declaration.format is ReportFormat.CSV:
            self._types = query.describe(cursor, inner)
        shaped = query.shaped(self.declaration, inner, self._types)
        return query.bounded(self.declaration, shaped, output.room_for(self.declaration, left))

    def estimate(self, cursor: Cursor) -> int | None:
        """The planner's estimate of the rows the report reads."""
        return query.estimate(cursor, self.rows)


class ReadAhead:
    """A run's pages read a page ahead, on a thread of its own: while the worker writes one
    page, the database already reads the next (the two on their own cores) instead of each
    waiting for the other. ``read(after, limit)`` reads one page in a transaction of its own;
    on that thread it uses the thread's own connection, which ``close()`` closes."""

    def __init__(self, read: Callable[[Any, int], list[Any]], alias: str) -> None:
        self._read = read
        self._alias = alias
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="litejobs-report")
        self._ahead: tuple[Any, int, Future[list[Any]]] | None = None

    def page(self, after: Any, limit: int, *, following: int) -> list[Any]:
        """Up to ``limit`` rows after the key ``after`` (read ahead when they were asked for
        already); a full page starts the read of the ``following`` rows after it."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead[:2] == (after, limit):
            rows = ahead[2].result()
        else:
            rows = self._thread.submit(self._read, after, limit).result()
        if following > 0 and len(rows) == limit:
            key = rows[-1][0]
            self._ahead = (key, following, self._thread.submit(self._read, key, following))
        return rows

    def close(self) -> None:
        """Wait for a read under way, close the thread's connection and end the thread."""
        self._thread.submit(_close, self._alias)
        self._thread.shutdown(wait=True)


def _close(alias: str) -> None:
    """Close this thread's connection to ``alias`` (connections are per thread)."""
    connections[alias].close()
