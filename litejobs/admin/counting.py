"""Counts that never scan the job table: a paginator that counts at most a cap, the
planner's estimate past it, and the table's size from ``pg_class``; what a million-row
listing shows beside its pages."""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any, NamedTuple, cast

from django.core.paginator import Paginator
from django.db import connection
from django.db.models import QuerySet

from ..models import Job


class CappedCountPaginator(Paginator):
    """Counts at most ``CAP`` rows, so a page of a million-row listing costs no full count.

    ``capped`` tells the template to show "10000+" instead of an exact total.
    """

    CAP = 10_000

    @cached_property
    def count(self) -> int:
        """The row count, or ``CAP`` when there are more (one LIMITed count)."""
        counted, self.capped = capped_count(cast(QuerySet[Any], self.object_list), self.CAP)
        return counted

    capped = False


def capped_count(rows: QuerySet[Any], cap: int | None = None) -> tuple[int, bool]:
    """How many rows, up to ``cap`` (the paginator's ``CAP``), and whether there are more.

    Unordered: the count may take any index (or the table) rather than walk the id order.
    """
    cap = CappedCountPaginator.CAP if cap is None else cap
    counted: int = rows.order_by()[: cap + 1].count()
    return min(counted, cap), counted > cap


class Total(NamedTuple):
    """A listing's total as shown: counted (``capped`` at the cap) or the planner's
    ``estimated`` figure."""

    number: int
    capped: bool = False
    estimated: bool = False


def filtered_total(rows: QuerySet[Any]) -> Total:
    """The planner's estimate when it expects more rows than the cap, else the capped count.

    A count reads each row it counts (the table too, for rows its index alone cannot vouch
    for): ten thousand dead jobs spread over a million rows cost it ten thousand table
    pages, the estimate none.
    """
    planned = planned_rows(rows)
    if planned > CappedCountPaginator.CAP:
        return Total(planned, estimated=True)
    return Total(*capped_count(rows))


def planned_rows(rows: QuerySet[Any]) -> int:
    """The planner's estimate of how many rows ``rows`` matches: one EXPLAIN, no scan."""
    if rows.query.is_empty():
        return 0  # refused input: no statement to explain
    plan = json.loads(rows.order_by().explain(format="json"))
    return int(plan[0]["Plan"]["Plan Rows"])


def estimated_rows() -> int:
    """The planner's row estimate for the job table (``pg_class.reltuples``): no scan.

    -1 when the table was never analyzed.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
            [Job._meta.db_table],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else -1
