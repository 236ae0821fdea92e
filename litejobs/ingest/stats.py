"""What a pipeline has done: ``stats()`` (its outcomes since it began) and its counts per
hour (the admin's chart, the metrics)."""

from __future__ import annotations

import enum
from collections import defaultdict
from datetime import datetime
from typing import Any

from django.db import connections

from ..conf import settings
from ..core.enums import IngestOutcome
from ..sql.cursors import fetch_all, hot_cursor, run_query
from .declarations import Declaration

__all__ = ["DropCounts", "hourly", "stats"]


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


def stats(declaration: Declaration) -> dict[str, Any]:
    """``{"accepted": n, "dropped": {reason: n}, "errored": n}`` since the pipeline began."""
    with hot_cursor(connections[settings.DATABASE]) as cursor:
        run_query(cursor, "ingest_totals", {"pipeline": declaration.name})
        rows = fetch_all(cursor)
    totals = {outcome.value: 0 for outcome in IngestOutcome}
    dropped: dict[str, int] = {}
    for row in rows:
        totals[row["outcome"]] += row["count"]
        if row["outcome"] == IngestOutcome.DROPPED:
            dropped[row["reason"]] = row["count"]
    return {
        "accepted": totals[IngestOutcome.ACCEPTED],
        "dropped": DropCounts(declaration.drop_reasons, dropped),
        "errored": totals[IngestOutcome.ERRORED],
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
