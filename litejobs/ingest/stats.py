"""What a pipeline has done: ``stats()`` (its outcomes since it began) and its counts per
hour (the admin's chart, the metrics)."""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import connections

from ..conf import settings
from ..core.enums import IngestOutcome
from ..sql.cursors import fetch_all, hot_cursor, run_query
from .declarations import Declaration

__all__ = ["DropCounts", "buffers", "hourly", "stats", "totals"]


class DropCounts(dict[str, int]):
    """Dropped records by reason value; a reason of the set that dropped nothing counts 0,
    and a member of the reason enum reads the same as its value."""

    def __init__(self, reasons: type[enum.Enum], counts: dict[str, int]) -> None:
        super().__init__(counts)
        self._values = {str(member.value) for member in reasons}

    def __missing__(self, reason: Any) -> int:
        value = str(reason.value) if isinstance(reason, enum.Enum) else reason
        if value in self:
            return self[value]
        if value in self._values:
            return 0
        raise KeyError(reason)

    def __contains__(self, reason: object) -> bool:
        value = reason.value if isinstance(reason, enum.Enum) else reason
        return super().__contains__(value)

    def get(self, reason: Any, default: Any = None) -> Any:
        try:
            return self[reason]
        except KeyError:
            return default

    def __eq__(self, other: object) -> bool:
        if isinstance(other, dict):
            other = {(k.value if isinstance(k, enum.Enum) else k): v for k, v in other.items()}
        return dict.__eq__(self, other)

    __hash__ = None  # a dict: unhashable


def totals(names: Iterable[str]) -> dict[str, dict[tuple[str, str], int]]:
    """Each named pipeline's counts since it began, by (outcome, reason); one statement."""
    with hot_cursor(connections[settings.DATABASE]) as cursor:
        run_query(cursor, "ingest_totals", {"names": list(names)})
        rows = fetch_all(cursor)
    counted: dict[str, dict[tuple[str, str], int]] = defaultdict(dict)
    for row in rows:
        counted[row["pipeline"]][(row["outcome"], row["reason"])] = int(row["count"])
    return dict(counted)


def buffers(names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each named pipeline's buffer, when it holds records: ``{"buffered": n, "oldest":
    when the oldest was fed}``; one statement."""
    with hot_cursor(connections[settings.DATABASE]) as cursor:
        run_query(cursor, "ingest_backlog", {"names": list(names)})
        return {row["pipeline"]: row for row in fetch_all(cursor)}


def stats(declaration: Declaration) -> dict[str, Any]:
    """``{"accepted": n, "dropped": {reason: n}, "errored": n}`` since the pipeline began."""
    counted = {outcome.value: 0 for outcome in IngestOutcome}
    dropped: dict[str, int] = {}
    for (outcome, reason), count in totals([declaration.name]).get(declaration.name, {}).items():
        counted[outcome] += count
        if outcome == IngestOutcome.DROPPED:
            dropped[reason] = count
    return {
        "accepted": counted[IngestOutcome.ACCEPTED],
        "dropped": DropCounts(declaration.drop_reasons, dropped),
        "errored": counted[IngestOutcome.ERRORED],
    }


def hourly(pipeline: str, since: datetime) -> dict[datetime, dict[tuple[str, str], int]]:
    """The pipeline's counts per hour from ``since``, by (outcome, reason)."""
    with hot_cursor(connections[settings.DATABASE]) as cursor:
        run_query(cursor, "ingest_hourly", {"pipeline": pipeline, "since": since})
        rows = fetch_all(cursor)
    hours: dict[datetime, dict[tuple[str, str], int]] = defaultdict(dict)
    for row in rows:
        hours[row["hour"]][(row["outcome"], row["reason"])] = row["count"]
    return dict(hours)
