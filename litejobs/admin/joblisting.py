"""The job listing at a million rows: filters that each meet an index, keyset paging
(``?after=<id>`` / ``?before=<id>`` instead of OFFSET) and counts that never scan the table.

Its filters are ``jobfilters`` (and ``payloadfilter``), each meeting an index; its counts are
``counting``'s.

The listing reads its own parameters only (its filters' and its page links'): anything else
in the query string, a value no filter takes or a broken page link is refused with a coded
message above an empty list, never a 500, never a list that silently ignores it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, cast
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.views.main import ORDER_VAR, ChangeList
from django.db.models import F, Q, QuerySet
from django.http import HttpRequest

from ..exceptions import InvalidInput
from .base import refused_error
from .counting import CappedCountPaginator, Total, capped_count, estimated_rows, filtered_total
from .jobfilters import AFTER, BEFORE, IDS, NAME, QUEUE, STATE, InputFilter, RangeFilter


def listing_url(
    jobs_url: str,
    *,
    state: str = "",
    queue: str = "",
    name: str = "",
    ids: Iterable[int] = (),
) -> str:
    """A link into the job listing (``jobs_url``) filtered as its own filters write it, so the
    filter panel shows what is chosen and the bulk action over the filter accepts it."""
    given = {STATE: state, QUEUE: queue, NAME: name, IDS: ",".join(map(str, ids))}
    return f"{jobs_url}?{urlencode({key: value for key, value in given.items() if value})}"


class KeysetChangeList(ChangeList):
    """Newest first by id (under a created / finished date range: by that date, then id),
    paged by the job at the edge of the page instead of an OFFSET.

    The total is the planner's estimate once it exceeds the cap (unfiltered, the table's
    size), else the capped count. A listing that fits on one page counts the rows it shows (one
    read: a job that changes state between a count and a read cannot show "0 jobs" beside
    its row).
    """

    def __init__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> None:
        #: What the listing refused of its own parameters (its filters say theirs).
        self.refusals: list[InvalidInput] = []
        self.after = self._edge(request, AFTER)
        self.before = None if self.after is not None else self._edge(request, BEFORE)
        self.estimated = False
        self.capped = False
        self.newer_url: str | None = None
        self.older_url: str | None = None
        super().__init__(request, *args, **kwargs)

    def get_filters_params(self, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The filter lookups, without the paging parameters (they are no column lookups)."""
        lookup_params = super().get_filters_params(params)
        for name in (AFTER, BEFORE, ORDER_VAR):
            lookup_params.pop(name, None)
        return lookup_params

    def get_queryset(
        self, request: HttpRequest, exclude_parameters: list[str | None] | None = None
    ) -> QuerySet[Any]:
        """The jobs the filters match; none when a parameter was refused (each refusal a
        message saying why).

        A parameter no filter reads is dropped before Django's own lookups could apply it to
        a column (``?payload__card=...`` would match values the job pages redact).
        """
        unknown = sorted(set(self.get_filters_params()) - set(self._parameters()))
        if unknown:
            self.refusals.append(_unknown(unknown))
            for name in unknown:
                self.params.pop(name, None)
                self.filter_params.pop(name, None)
        queryset = super().get_queryset(request, exclude_parameters)
        if exclude_parameters is None:
            for refusal in self.refusals:
                refused_error(request, refusal)
        return queryset.none() if self.refused else queryset

    @property
    def refused(self) -> bool:
        """Whether a parameter was refused: the list then shows no job (and says so)."""
        return bool(self.refusals) or any(
            getattr(spec, "refused", False) for spec in getattr(self, "filter_specs", ())
        )

    def _parameters(self) -> Iterator[str]:
        """The parameters the listing's filters read (each filter is an ``InputFilter`` or a
        ``SimpleListFilter``)."""
        for list_filter in self.list_filter:
            if isinstance(list_filter, type) and issubclass(list_filter, InputFilter):
                yield from (box[0] for box in list_filter.boxes)
            elif isinstance(list_filter, type) and issubclass(list_filter, admin.SimpleListFilter):
                yield str(list_filter.parameter_name)

    def _edge(self, request: HttpRequest, name: str) -> int | None:
        """The keyset edge ``name`` from the query string: a job id, else refused."""
        value = request.GET.get(name, "")
        if not value:
            return None
        if value.isascii() and value.isdigit() and int(value) < 2**63:
            return int(value)
        self.refusals.append(
            InvalidInput(
                f"That page link is broken: {name}= takes a job id, not {value[:40]!r}. Start "
                "again from the newest jobs (clear the filters, or follow the list's own "
                "newer / older links).",
                code="cursor-invalid",
            )
        )
        return None

    def get_ordering(self, request: HttpRequest, queryset: QuerySet[Any]) -> list[Any]:
        """Newest first: keyset paging walks the primary key (or a date range's index)."""
        return ["-pk"]

    def get_ordering_field_columns(self) -> dict[int, Any]:
        """No column is sorted but the id."""
        return {}

    def get_results(self, request: HttpRequest) -> None:
        """One page of ``list_per_page`` rows past the edge, plus one to know if more follow."""
        filtered = self.has_active_filters or self.query
        total = filtered_total(self.queryset) if filtered else None
        dated = self._dated()
        if self.refused:
            rows = []
        elif dated is not None:
            rows = self._dated_window(*dated)
        else:
            rows = self._window(few=total is not None and not (total.capped or total.estimated))
        more = len(rows) > self.list_per_page
        rows = rows[: self.list_per_page]
        if self.before is not None:
            rows.reverse()
        self.result_list = rows
        self._link(rows, more)
        self._count(rows, more, total)
        self.show_full_result_count = False
        self.full_result_count = None
        self.show_admin_actions = True
        self.can_show_all = False
        self.multi_page = False
        self.paginator = self.model_admin.get_paginator(request, self.queryset, self.list_per_page)

    def _window(self, *, few: bool) -> list[Any]:
        """The page's rows (and one more). With ``few`` matches (a filter's count stayed under
        the cap), the rows are found through the filter's index and sorted, instead of
        walking the id order: matches that lie far back (a payload value last used months
        ago) would make that walk read most of the table before it meets the first one."""
        newest_first: Any = (F("pk") + 0).desc() if few else "-pk"
        oldest_first: Any = (F("pk") + 0).asc() if few else "pk"
        window = self.queryset.order_by(newest_first)
        if self.after is not None:
            window = window.filter(pk__lt=self.after)
        elif self.before is not None:
            window = window.filter(pk__gt=self.before).order_by(oldest_first)
        return list(window[: self.list_per_page + 1])

    def _dated(self) -> tuple[str, Q, tuple[tuple[str, ...], ...]] | None:
        """The date range in force, if any: its column, its bounds and the states it spans."""
        for spec in self.filter_specs:
            if isinstance(spec, RangeFilter) and spec.used_parameters:
                try:
                    bounds = spec.bounds(cast(dict[str, str], spec.used_parameters))
                except InvalidInput:
                    return None  # refused: the filter already matches no job
                return spec.column, bounds, spec.lives
        return None

    def _dated_window(
        self, column: str, bounds: Q, lives: tuple[tuple[str, ...], ...]
    ) -> list[Any]:
        """The page's rows (and one more), newest first by ``column`` then id, the keyset edge
        being the edge job's (``column``, id).

        A date range is read along its own index instead of the ids: a day months back is
        a few thousand jobs far down the id order. Each arm (finished jobs, live jobs) is
        read in that order through its bounds and merged (``UNION ALL``): an ``OR`` of the
        arms could use no index order.
        """
        older = self.before is None
        beyond, order = ("lt", (f"-{column}", "-pk")) if older else ("gt", (column, "pk"))
        edge = self._edge_at(column)
        past = Q()
        if edge is not None:
            at, pk = edge
            # (column, id) beyond the edge's; the first test alone bounds the index scan.
            past = Q(**{f"{column}__{beyond}e": at}) & (
                Q(**{f"{column}__{beyond}": at}) | Q(**{f"pk__{beyond}": pk})
            )
        size = self.list_per_page + 1
        arms = [
            self.queryset.filter(bounds, past, state__in=life).order_by(*order)[:size]
            for life in lives
        ]
        if len(arms) == 1:
            return list(arms[0])
        return list(arms[0].union(*arms[1:], all=True).order_by(*order)[:size])

    def _edge_at(self, column: str) -> tuple[Any, int] | None:
        """The edge job's ``column`` and id; ``None`` on the first page, or when the edge
        job is gone (deleted since): the listing starts again from the newest."""
        edge = self.after if self.after is not None else self.before
        if edge is None:
            return None
        at = self.model._default_manager.filter(pk=edge).values_list(column, flat=True).first()
        return None if at is None else (at, edge)

    def _link(self, rows: list[Any], more: bool) -> None:
        """The newer / older page links; each keeps the filters and drops the other edge."""
        if not rows:
            return
        newer = self.after is not None or (self.before is not None and more)
        older = self.before is not None or more
        if newer:
            self.newer_url = self.get_query_string({BEFORE: rows[0].pk}, remove=[AFTER])
        if older:
            self.older_url = self.get_query_string({AFTER: rows[-1].pk}, remove=[BEFORE])

    def _count(self, rows: list[Any], more: bool, total: Total | None) -> None:
        """The total shown beside the pages (``total``, the filter's), never a full count."""
        if not more and self.after is None and self.before is None:
            total = Total(len(rows))
        elif total is None:
            estimate = estimated_rows()
            if estimate > CappedCountPaginator.CAP:
                total = Total(estimate, estimated=True)
            else:
                total = Total(*capped_count(self.queryset))
        self.result_count, self.capped, self.estimated = total


def _unknown(names: list[str]) -> InvalidInput:
    """The refusal of parameters no filter of the listing reads."""
    shown = ", ".join(repr(name[:40]) for name in names[:5])
    return InvalidInput(
        f"The job list has no filter {shown}: filter with the panel beside the list (state, "
        "queue, job, tenant, key, dates, payload field=value, job ids). A link into the list "
        "takes those filters' own parameters, e.g. ?state__exact=dead&queue=default.",
        code="listing-filter-invalid",
    )
