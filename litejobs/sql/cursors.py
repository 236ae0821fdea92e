"""How litejobs' named statements run: the cursors (a hot one that prepares them server-side,
one that joins the caller's transaction, a pipeline), ``run_query``, and rows read by column
name whatever the cursor returns (psycopg's dict rows, Django's tuples)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from types import TracebackType
from typing import Any, Protocol, Self, cast

import psycopg
from django.db import DatabaseError
from django.db.backends.base.base import BaseDatabaseWrapper
from psycopg.pq import TransactionStatus
from psycopg.rows import RowFactory, dict_row

from ..conf import settings
from ..exceptions import DatabaseUnsupported, MigrationsUnapplied
from . import prepared, query


class Cursor(Protocol):
    """What a named statement needs of a cursor: a hot psycopg cursor's or Django's."""

    @property
    def description(self) -> Any: ...

    @property
    def rowcount(self) -> int: ...

    def execute(self, query: Any, params: Any = ..., /) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Sequence[Any]: ...


class HotCursor(Cursor, Protocol):
    """A cursor of its own on a connection (``hot_cursor``), closed at the end of its block."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> None: ...


def hot_cursor(connection: BaseDatabaseWrapper, *, rows: RowFactory[Any] = dict_row) -> HotCursor:
    """A server-binding psycopg cursor on a Django connection, for hot paths; rows are dicts
    (``rows=psycopg.rows.tuple_row``: tuples).

    It shares the connection (and so the caller's transaction) but skips client-side
    parameter formatting and lets ``execute`` prepare the statement server-side (see
    ``PREPARED_STATEMENTS``). While Django logs queries (DEBUG, ``CaptureQueriesContext``)
    it comes wrapped in Django's debug cursor, so statement counts stay visible to tests.
    """
    require_postgresql(connection)
    connection.ensure_connection()
    pg = connection.connection
    allow_prepared(pg)
    cursor = psycopg.Cursor(pg, row_factory=rows)
    if connection.queries_logged:
        # Django's debug wrapper wraps any DB-API cursor, a psycopg one included.
        return connection.make_debug_cursor(cursor)  # type: ignore[arg-type]  # django-stubs want Django's wrapper; Django wraps the driver's
    return cursor


def require_postgresql(connection: BaseDatabaseWrapper) -> None:
    """Refuse a database that is not PostgreSQL (``postgresql-required``) before litejobs
    speaks psycopg to it; ``manage.py check`` says so too (litejobs.E001)."""
    if connection.vendor != "postgresql":
        raise DatabaseUnsupported(
            f"litejobs needs PostgreSQL; the database {connection.alias!r} is "
            f"{connection.vendor}. Point LITEJOBS['DATABASE'] at an alias of DATABASES whose "
            "ENGINE is django.db.backends.postgresql (PostgreSQL 14 or newer)."
        )


#: What PostgreSQL answers a statement naming a table or column that is not there yet.
_NOT_MIGRATED = (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn)


@contextmanager
def migrated(connection: BaseDatabaseWrapper) -> Iterator[None]:
    """Run litejobs' statements on a database that has its tables: one that lacks them (before
    ``migrate``, or a release ahead of its migrations) raises ``MigrationsUnapplied`` naming
    the command to run, instead of the driver's error (raw, or wrapped by Django)."""
    try:
        yield
    except (psycopg.Error, DatabaseError) as error:
        if not isinstance(error, _NOT_MIGRATED) and not isinstance(error.__cause__, _NOT_MIGRATED):
            raise
        raise MigrationsUnapplied(
            f"litejobs' tables are not (all) in the database {connection.alias!r}: run "
            "`python manage.py migrate` (litejobs' migrations create them) before enqueueing."
        ) from error


#: A prepare threshold no query reaches: nothing is prepared for being run often.
NEVER_BY_COUNT = sys.maxsize


def allow_prepared(pg: psycopg.Connection[Any]) -> None:
    """Let ``execute(..., prepare=True)`` prepare on a connection opened by Django's settings
    (unless ``PREPARED_STATEMENTS`` is off, or the project set a threshold of its own).

    Django opens psycopg connections with ``prepare_threshold=None`` (for connection
    poolers), and psycopg then ignores an explicit ``prepare=True`` too. A threshold no query
    reaches prepares litejobs' named statements, which ask for it, and nothing else.
    """
    if pg.prepare_threshold is None and settings.PREPARED_STATEMENTS:
        pg.prepare_threshold = NEVER_BY_COUNT


@contextmanager
def joining_cursor(connection: BaseDatabaseWrapper) -> Iterator[Cursor]:
    """A hot cursor for a write that joins the transaction of the atomic block around it.

    When that block is the outermost one and has sent nothing yet, the write would be the
    whole transaction: it then runs as one autocommit statement, with no BEGIN and no COMMIT
    round trip, and the block's commit has nothing left to send (``on_commit`` callbacks
    still run at it, after the write is committed).
    """
    require_postgresql(connection)
    connection.ensure_connection()
    pg = connection.connection
    alone = (
        not pg.autocommit
        and len(connection.atomic_blocks) <= 1
        and pg.info.transaction_status == TransactionStatus.IDLE
    )
    if alone:
        pg.autocommit = True
    try:
        with hot_cursor(connection) as cursor:
            yield cursor
    finally:
        if alone:
            pg.autocommit = False


def pipelined(connection: BaseDatabaseWrapper) -> AbstractContextManager[Any]:
    """A block in which statements go out without waiting for each other's answers (psycopg's
    pipeline mode; where libpq lacks it, each waits as usual). Answers are read after it."""
    require_postgresql(connection)
    connection.ensure_connection()
    if not psycopg.Pipeline.is_supported():
        return nullcontext()
    pipeline: psycopg.Pipeline = connection.connection.pipeline()
    return pipeline


def run_query(cursor: Cursor, name: str, params: Mapping[str, Any] | None = None) -> None:
    """Execute a named statement: the one way litejobs runs one. On a hot cursor it is
    prepared server-side if it is marked so, and only then. Without ``params`` the statement
    is sent as written (a ``%`` in it is no placeholder)."""
    if isinstance(cursor, psycopg.Cursor):
        prepare = bool(settings.PREPARED_STATEMENTS) and name in prepared()
        cursor.execute(query(name), params, prepare=prepare)
    else:
        cursor.execute(query(name), params)


async def arun_query(
    cursor: psycopg.AsyncCursor[Any], name: str, params: Mapping[str, Any] | None = None
) -> None:
    """``run_query`` on an asynchronous psycopg cursor (the live pages' own connections)."""
    await cursor.execute(query(name), params)


def fetch_all(cursor: Cursor) -> list[dict[str, Any]]:
    """Every row the last statement answered, each a dict by column name."""
    found = cursor.fetchall()
    if found and not isinstance(found[0], dict):
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, values, strict=True)) for values in found]
    return cast(list[dict[str, Any]], found)


def fetch_one(cursor: Cursor) -> dict[str, Any] | None:
    """The first row the last statement answered, as a dict by column name; None if none."""
    found = cursor.fetchone()
    if found is None or isinstance(found, dict):
        return found
    return dict(zip((column[0] for column in cursor.description), found, strict=True))
