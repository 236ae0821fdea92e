"""litejobs' named SQL: what the ORM cannot express (claims, fenced transitions, heartbeats,
conditional claims of work items), one file per feature family, and how it runs.

Each ``.sql`` file here holds statements under ``-- name: <statement>`` lines (``jobs.sql``,
``leases.sql``, ``leadership.sql``, ``steps.sql``, ``scheduling.sql``, ``outbox.sql``,
``webhooks.sql``, ``workqueues.sql``); a name is used by exactly one function. ``{claimable}``,
``{unclaimable}``, ``{live}``, ``{terminal}``, ``{finished_occurrences}``, ``{live_items}``
and ``{finished_items}`` expand to the state lists of ``litejobs.core.enums``; ``{db_now}`` to
the instant lease arithmetic runs at (the ``db_now`` parameter, from
``litejobs.clock.lease_instant()``: NULL means the database's own clock). Values are always
bound parameters (``%(name)s``). Rows are read by column name (``fetch_all``, ``fetch_one``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import psycopg
from django.db.backends.base.base import BaseDatabaseWrapper
from psycopg.rows import dict_row

from ..conf import settings
from ..core.enums import (
    CLAIMABLE,
    FINISHED_ITEM,
    LIVE,
    LIVE_ITEM,
    OCCURRENCE_FINISHED,
    TERMINAL,
    UNCLAIMABLE,
    sql_list,
)
from ..core.sql import Statements

#: Leases are written and compared on the database's clock unless a test clock supplies it.
DB_NOW = "COALESCE(%(db_now)s::timestamptz, statement_timestamp())"


def _placeholders() -> dict[str, str]:
    return {
        "claimable": sql_list(CLAIMABLE),
        "unclaimable": sql_list(UNCLAIMABLE),
        "live": sql_list(LIVE),
        "terminal": sql_list(TERMINAL),
        "finished_occurrences": sql_list(OCCURRENCE_FINISHED),
        "live_items": sql_list(LIVE_ITEM),
        "finished_items": sql_list(FINISHED_ITEM),
        "db_now": DB_NOW,
    }


_statements = Statements(__package__, _placeholders)


def queries() -> dict[str, str]:
    """Every named statement, with the state lists filled in."""
    return _statements.all


def query(name: str) -> str:
    """The SQL of the named statement."""
    return _statements[name]


def hot_cursor(connection: BaseDatabaseWrapper) -> Any:
    """A server-binding psycopg cursor on a Django connection, for hot paths; rows are dicts.

    It shares the connection (and so the caller's transaction) but skips client-side
    parameter formatting and lets ``execute`` prepare the statement server-side (see
    ``PREPARED_STATEMENTS``). While Django logs queries (DEBUG, ``CaptureQueriesContext``)
    it comes wrapped in Django's debug cursor, so statement counts stay visible to tests.
    """
    connection.ensure_connection()
    cursor = psycopg.Cursor(connection.connection, row_factory=dict_row)
    if connection.queries_logged:
        # Django's debug wrapper wraps any DB-API cursor, a psycopg one included.
        return connection.make_debug_cursor(cursor)  # type: ignore[arg-type]
    return cursor


def pipelined(connection: BaseDatabaseWrapper) -> AbstractContextManager[Any]:
    """A block in which statements go out without waiting for each other's answers (psycopg's
    pipeline mode; where libpq lacks it, each waits as usual). Answers are read after it."""
    connection.ensure_connection()
    if not psycopg.Pipeline.is_supported():
        return nullcontext()
    pipeline: psycopg.Pipeline = connection.connection.pipeline()
    return pipeline


def run_query(cursor: Any, name: str, params: dict[str, Any]) -> None:
    """Execute a named statement, prepared server-side on a hot cursor."""
    if isinstance(cursor, psycopg.Cursor):
        cursor.execute(query(name), params, prepare=bool(settings.PREPARED_STATEMENTS))
    else:
        cursor.execute(query(name), params)


def fetch_all(cursor: Any) -> list[dict[str, Any]]:
    """Every row the last statement answered, each a dict by column name."""
    found = cursor.fetchall()
    if found and not isinstance(found[0], dict):
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, values, strict=True)) for values in found]
    rows: list[dict[str, Any]] = found
    return rows


def fetch_one(cursor: Any) -> dict[str, Any] | None:
    """The first row the last statement answered, as a dict by column name; None if none."""
    found = cursor.fetchone()
    if found is None or isinstance(found, dict):
        return found
    return dict(zip((column[0] for column in cursor.description), found, strict=True))
