"""What ``doctor`` reports about ingest pipelines: a buffer whose oldest record waits too
long (no worker serves the ingest queue, or the drain cannot keep up) or is over capacity,
and file imports whose job ended without finishing them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import connections

from ..conf import settings
from ..core.diagnostics import Problem
from ..core.durations import format_age
from ..core.enums import FreshnessKind
from ..sql.cursors import fetch_all, hot_cursor, run_query
from . import stats
from .declarations import IMPORT_JOB, Declaration, pipelines

__all__ = ["problems"]


def problems(*, now: datetime, max_age: timedelta) -> list[Problem]:
    """``ingest-backlog`` (the oldest buffered record of a pipeline waited longer than
    ``max_age``, or than its bounded freshness), ``ingest-over-capacity`` (more buffered than
    the buffer holds: its overflow pages) and ``ingest-import-stopped`` (an import whose job
    ended dead or cancelled)."""
    with hot_cursor(connections[settings.DATABASE]) as cursor:
        run_query(cursor, "ingest_imports_failed", {"job": IMPORT_JOB})
        stopped = fetch_all(cursor)
    found: list[Problem] = []
    for name, row in stats.buffers(pipelines.keys()).items():
        found += _buffer_problems(pipelines[name], row, now, max_age)
    found += [
        Problem(
            "ingest-import-stopped",
            f"The import {run['id']} of {run['file']!r} through {run['pipeline']!r} is "
            f"unfinished and its job is {run['state']}: nothing will carry it on.",
            where=run["pipeline"],
            hint="Read the job's last error (litejobs show), fix the cause, then retry the job "
            "(litejobs retry): the import resumes at its last committed offset.",
            count=1,
        )
        for run in stopped
    ]
    return found


def _limit(declaration: Declaration, max_age: timedelta) -> timedelta:
    freshness = declaration.freshness
    if freshness is not None and freshness.kind is FreshnessKind.BOUNDED and freshness.within:
        return min(max_age, freshness.within)
    return max_age


def _buffer_problems(
    declaration: Declaration, row: dict[str, Any], now: datetime, max_age: timedelta
) -> list[Problem]:
    found = []
    age = now - row["oldest"]
    limit = _limit(declaration, max_age)
    if age > limit:
        found.append(
            Problem(
                "ingest-backlog",
                f"Pipeline {declaration.name!r}: {row['buffered']} record(s) buffered, the "
                f"oldest for {format_age(age)}, over {format_age(limit)}"
                + (f" (its freshness: {declaration.freshness})." if declaration.freshness else "."),
                where=declaration.name,
                hint=f"Check that a worker serves the {settings.INGEST_QUEUE!r} queue and that "
                "the pipeline's drain job is not failing (litejobs pipeline show).",
                count=row["buffered"],
            )
        )
    if row["buffered"] > declaration.buffer.capacity:
        found.append(
            Problem(
                "ingest-over-capacity",
                f"Pipeline {declaration.name!r}: {row['buffered']} records buffered, over its "
                f"capacity of {declaration.buffer.capacity}.",
                where=declaration.name,
                hint="Run more workers for the ingest queue, or find why the drain is slow.",
                count=row["buffered"],
            )
        )
    return found
