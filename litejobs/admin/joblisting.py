"""The job listing at a million rows: filters that each meet an index, keyset paging
(``?after=<id>`` / ``?before=<id>`` instead of OFFSET) and counts that never scan the table.

Every filter on a job column is written as two arms, finished jobs and live jobs: the
finished arm meets a partial index over finished jobs only (the claim never writes to it),
the live arm meets the small live-key index. Together they cover every state.

The listing reads its own parameters only (its filters' and its page links'): anything else
in the query string, a value no filter takes or a broken page link is refused with a coded
message above an empty list, never a 500, never a list that silently ignores it.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from datetime import datetime, time
from functools import cached_property
from typing import Any, NamedTuple, cast
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.views.main import ORDER_VAR, ChangeList
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import F, Q, QuerySet
from django.http import HttpRequest
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.timezone import get_current_timezone, is_naive, make_aware

from ..core.enums import LIVE, TERMINAL, JobState
from ..exceptions import InvalidInput, LitejobsError
from ..jobs import catalog
from ..models import Job, QueueState
from .base import refused_error

#: The keyset parameters: the page after (older than) or before (newer than) a job id.
AFTER = "after"
BEFORE = "before"
#: The listing's filter parameters that links into it (the dashboard's counts and problems, the
#: queues page) and the bulk action over a filter share.
STATE = "state__exact"
QUEUE = "queue"
NAME = "name"
IDS = "ids"
#: Job ids the ids filter takes at most (a problem names a few; the bulk action's own maximum).
IDS_MAX = 1000
#: A payload path deeper than this is refused (no payload the app writes nests so deep).
PAYLOAD_DEPTH = 8
PAYLOAD_LENGTH = 500


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


def by_life(*alternatives: Q, lives: tuple[tuple[str, ...], ...] = (TERMINAL, LIVE)) -> Q:
    """Any of ``alternatives``, split into finished arms and live arms (``lives``) so that
    each arm meets its own index.

    Alternatives are spelled out per arm (not ``(a | b) & life``): PostgreSQL factors a
    condition common to every arm out of an OR, and a factored OR of containments can use
    no partial index.
    """
    arms = Q()
    for life in lives:
        for alternative in alternatives:
            arms |= Q(alternative, state__in=life)
    return arms


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


def _refused(
    request: HttpRequest, spec: Any, queryset: QuerySet[Any], error: LitejobsError
) -> QuerySet[Any]:
    """A filter's refusal: its message, and no job (``spec.refused`` tells the listing)."""
    refused_error(request, error)
    spec.refused = True
    return queryset.none()


# Filters ------------------------------------------------------------------------------------


class StateFilter(admin.SimpleListFilter):
    """Filter by state (``state__exact``, as Django's own choices filter names it); a value that
    is no state is refused rather than read as a state no job is in."""

    title = "state"
    parameter_name = STATE
    refused = False

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, str]]:
        """Every state, in the order of a job's life."""
        return [(str(value), str(label)) for value, label in JobState.choices]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        """Jobs in the selected state; a value that is no state: a message and no jobs."""
        state = self.value()
        if not state:
            return queryset
        if state not in JobState.values:
            return _refused(request, self, queryset, _no_state(state))
        return queryset.filter(state=state)


def _no_state(state: str) -> InvalidInput:
    return InvalidInput(
        f"{state[:40]!r} is not a job state: choose one of {', '.join(JobState.values)} "
        f"({STATE}=dead lists the dead jobs).",
        code="listing-filter-invalid",
    )


def check_state(state: str) -> str:
    """``state`` when it is a job state (or empty: any state), else ``listing-filter-invalid``."""
    if state and state not in JobState.values:
        raise _no_state(state)
    return state


class QueueFilter(admin.SimpleListFilter):
    """Filter by queue; the choices come from declarations and queue switches, not a scan."""

    title = "queue"
    parameter_name = QUEUE

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, str]]:
        """Declared queues and queues with a switch (plus the one selected)."""
        names = {d.queue for d in catalog.all_jobs()}
        names |= set(QueueState.objects.values_list("name", flat=True))
        if self.value():
            names.add(self.value())
        return [(name, name) for name in sorted(names)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        """Jobs of the selected queue."""
        return queryset.filter(by_life(Q(queue=self.value()))) if self.value() else queryset


class NameFilter(admin.SimpleListFilter):
    """Filter by job name; the choices are the declared jobs (no DISTINCT over the table)."""

    title = "job"
    parameter_name = NAME

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, str]]:
        """Declared job names (plus the one selected, e.g. a renamed job's old name)."""
        names = {d.name for d in catalog.all_jobs()}
        if self.value():
            names.add(self.value())
        return [(name, name) for name in sorted(names)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        """Jobs of the selected name."""
        return queryset.filter(by_life(Q(name=self.value()))) if self.value() else queryset


class InputFilter(admin.ListFilter, ABC):
    """A filter typed into text boxes (tenants, keys, dates, payload values are no short
    list of choices). Refused input shows an error message and an empty list, never a 500."""

    template = "admin/litejobs/job/input_filter.html"
    #: (parameter, label, input type, placeholder) of each box.
    boxes: tuple[tuple[str, str, str, str], ...] = ()
    #: Whether the typed values were refused (the listing then shows no job).
    refused = False

    def __init__(
        self,
        request: HttpRequest,
        params: dict[str, Any],
        model: type[Any],
        model_admin: admin.ModelAdmin[Any],
    ) -> None:
        super().__init__(request, params, model, model_admin)
        for name in self.expected_parameters():
            if name in params:
                value = params.pop(name)
                text = (value[-1] if isinstance(value, list) else value).strip()
                if text:
                    self.used_parameters[name] = text

    def expected_parameters(self) -> list[str | None]:
        """The boxes' parameters."""
        return [box[0] for box in self.boxes]

    def has_output(self) -> bool:
        """The boxes always show."""
        return True

    def summary(self) -> str:
        """The typed values as people read them: ``acme``, ``from 2026-12-01 to 2026-12-02``."""
        labelled = len(self.boxes) > 1
        return " ".join(
            f"{label} {self.used_parameters[name]}" if labelled else str(self.used_parameters[name])
            for name, label, _, _ in self.boxes
            if name in self.used_parameters
        )

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        """The jobs the typed values match; refused input: a message and no jobs."""
        if not self.used_parameters:
            return queryset
        try:
            return queryset.filter(self.match(cast(dict[str, str], self.used_parameters)))
        except InvalidInput as refused:
            return _refused(request, self, queryset, refused)

    @abstractmethod
    def match(self, values: dict[str, str]) -> Q:
        """The condition the typed values stand for (each filter says its own)."""

    def choices(self, changelist: ChangeList) -> Iterator[dict[str, Any]]:
        """One form: the boxes, the other parameters as hidden fields, and a clear link."""
        kept = {
            name: value
            for name, value in changelist.params.items()
            if name not in self.expected_parameters() and name not in (AFTER, BEFORE)
        }
        yield {
            "boxes": [
                {
                    "name": name,
                    "label": label,
                    "type": kind,
                    "placeholder": placeholder,
                    "value": self.used_parameters.get(name, ""),
                }
                for name, label, kind, placeholder in self.boxes
            ],
            "hidden": sorted(kept.items()),
            "clear_url": changelist.get_query_string(
                remove=[*(box[0] for box in self.boxes), AFTER, BEFORE]
            ),
            "active": bool(self.used_parameters),
        }


class TenantFilter(InputFilter):
    """Jobs of one tenant (exact)."""

    title = "tenant"
    boxes = (("tenant", "tenant", "text", "exact tenant"),)

    def match(self, values: dict[str, str]) -> Q:
        """The tenant's jobs; the explicit non-empty test lets the tenant index serve."""
        return by_life(Q(tenant=values["tenant"]) & ~Q(tenant=""))


class KeyFilter(InputFilter):
    """Jobs with one idempotency key (exact), live or finished."""

    title = "idempotency key"
    boxes = (("key", "key", "text", "exact key"),)

    def match(self, values: dict[str, str]) -> Q:
        """The key's jobs."""
        return by_life(Q(key=values["key"]))


class IdsFilter(InputFilter):
    """Jobs by id: the jobs a dashboard problem names (``?ids=12,15,19``)."""

    title = "job ids"
    boxes = ((IDS, "ids", "text", "12, 15, 19"),)

    def match(self, values: dict[str, str]) -> Q:
        """The jobs of the typed ids."""
        return Q(pk__in=parse_ids(values[IDS]))


def parse_ids(text: str) -> tuple[int, ...]:
    """The job ids of ``text`` (separated by commas or spaces), or ``listing-filter-invalid``."""
    ids = text.replace(",", " ").split()
    if 0 < len(ids) <= IDS_MAX and all(i.isascii() and i.isdigit() and int(i) < 2**63 for i in ids):
        return tuple(int(i) for i in ids)
    raise InvalidInput(
        f"The job ids {text[:40]!r} are not a list of job ids: type up to {IDS_MAX} ids "
        "separated by commas, e.g. 12, 15, 19.",
        code="listing-filter-invalid",
    )


class RangeFilter(InputFilter):
    """Jobs whose ``column`` falls in ``[from, to]``: dates take whole days, or date-times."""

    column = ""
    #: The states whose jobs the range spans, each an arm with its own index.
    lives: tuple[tuple[str, ...], ...] = (TERMINAL, LIVE)

    def match(self, values: dict[str, str]) -> Q:
        """The range, over each arm of ``lives``."""
        return by_life(self.bounds(values), lives=self.lives)

    def bounds(self, values: dict[str, str]) -> Q:
        """From the start of ``from`` up to the end of ``to`` (either may be left empty)."""
        start, end = (f"{self.column}_from", f"{self.column}_to")
        bounds = Q()
        if start in values:
            bounds &= Q(**{f"{self.column}__gte": _instant(values[start], end_of_day=False)})
        if end in values:
            bounds &= Q(**{f"{self.column}__lte": _instant(values[end], end_of_day=True)})
        return bounds


class CreatedFilter(RangeFilter):
    """Jobs enqueued between two dates."""

    title = "created"
    column = "created_at"
    boxes = (
        ("created_at_from", "from", "date", "YYYY-MM-DD"),
        ("created_at_to", "to", "date", "YYYY-MM-DD"),
    )


class FinishedFilter(RangeFilter):
    """Jobs finished (done, dead, cancelled) between two dates."""

    title = "finished"
    column = "finished_at"
    boxes = (
        ("finished_at_from", "from", "date", "YYYY-MM-DD"),
        ("finished_at_to", "to", "date", "YYYY-MM-DD"),
    )

    #: Finished jobs only: the finish-time index holds nothing else.
    lives = (TERMINAL,)


def _instant(text: str, *, end_of_day: bool) -> datetime:
    """A typed date (a whole day, in the site's time zone) or date-time, made aware."""
    try:
        day = parse_date(text)
        moment = parse_datetime(text) if day is None else None
    except ValueError:
        moment = day = None
    if day is not None:
        moment = datetime.combine(day, time.max if end_of_day else time.min)
    if moment is None:
        raise InvalidInput(
            f"{text!r} is not a date: type it as 2026-12-31 or 2026-12-31 14:30.",
            code="listing-filter-invalid",
        )
    return make_aware(moment, get_current_timezone()) if is_naive(moment) else moment


class PayloadFilter(InputFilter):
    """Jobs whose payload holds a value: ``field=value`` or a path ``a.b=value``.

    Matched with JSON containment (``payload @> {...}``, the value bound as a parameter): the
    typed text never becomes SQL. A value that reads as JSON (``5``, ``true``, ``"5"``) is
    matched as that JSON value; an unquoted one also as the text it is, so ``order=5``
    finds ``{"order": 5}`` and ``{"order": "5"}``.

    It searches only payloads whose field the job pages show: a match on a field they redact
    would confirm the hidden value. With a job chosen, a field it declares ``sensitive=`` is
    refused (``listing-filter-sensitive``); without, every job an installed app declares is
    searched but those hiding the field, which a warning names.
    """

    title = "payload"
    boxes = (("payload", "field=value", "text", "customer.id=42"),)

    def __init__(
        self,
        request: HttpRequest,
        params: dict[str, Any],
        model: type[Any],
        model_admin: admin.ModelAdmin[Any],
    ) -> None:
        super().__init__(request, params, model, model_admin)
        #: The job the list is filtered to (its job filter): its declaration says what is hidden.
        self.job_name = request.GET.get(NAME, "")
        #: The typed field and the jobs not searched because their pages hide it.
        self.unsearched: tuple[str, list[str]] | None = None

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        """The matching jobs; a warning names the jobs left unsearched (their pages hide the
        field)."""
        matched = super().queryset(request, queryset)
        if self.unsearched is not None:
            messages.warning(
                request, _unsearched(*self.unsearched), extra_tags="listing-filter-sensitive"
            )
        return matched

    def match(self, values: dict[str, str]) -> Q:
        """Containment of the typed value at the typed path (either of its readings), in the
        payloads of the jobs whose pages show that field."""
        path, wanted = _payload_condition(values["payload"])
        documents = []
        for value in wanted:
            document: Any = value
            for field in reversed(path):
                document = {field: document}
            documents.append(document)
        searched, hiding = _searched(path, documents[0], self.job_name)
        if hiding:
            self.unsearched = (".".join(path), hiding)
        return by_life(*(Q(payload__contains=d, name__in=searched) for d in documents))


def _searched(
    path: list[str], document: dict[str, Any], job_name: str
) -> tuple[list[str], list[str]]:
    """The jobs (``job_name``, else every declared job) whose pages show the value at ``path``
    of a payload like ``document``, and those whose pages hide it. A chosen job that hides it
    is refused (``listing-filter-sensitive``).

    A job hides the fields its declaration (and an add-on, for this payload) names
    ``sensitive=``, everything inside them, and every field of a job no installed app declares.
    A path that holds a hidden field (``card`` of a hidden ``card.number``) is hidden too: a
    typed object would match it.
    """
    if job_name:
        try:
            definitions = [catalog.get(job_name)]
        except LitejobsError:
            raise _hidden(
                path,
                f"no installed app declares job {job_name[:80]!r}, so its pages hide every "
                "value of its payload",
            ) from None
    else:
        definitions = list(catalog.all_jobs())
    searched: list[str] = []
    hiding: list[str] = []
    for definition in definitions:
        hidden = catalog.sensitive_of(definition, document)
        (hiding if any(_overlap(path, f) for f in hidden) else searched).append(definition.name)
    if job_name and hiding:
        raise _hidden(path, f"job {job_name[:80]} declares it sensitive=, so its pages redact it")
    return ([job_name] if job_name else searched), sorted(hiding)


def _unsearched(field: str, jobs: list[str]) -> str:
    shown = ", ".join(jobs[:3]) + (f" and {len(jobs) - 3} more jobs" if len(jobs) > 3 else "")
    return (
        f"Not searched: {shown}, whose pages show the payload field {field[:80]!r} redacted "
        "(declared sensitive=): a match would confirm the value they hide."
    )


def _overlap(path: list[str], field: str) -> bool:
    """Whether ``path`` lies inside the (dotted) ``field`` or holds it."""
    parts = field.split(".")
    shared = min(len(path), len(parts))
    return path[:shared] == parts[:shared]


def _hidden(path: list[str], why: str) -> InvalidInput:
    return InvalidInput(
        f"The payload field {'.'.join(path)[:80]!r} cannot be filtered on: {why}, and a match "
        "would confirm the value they hide. Filter on a field the job's page shows, such as an "
        "order or customer id.",
        code="listing-filter-sensitive",
    )


def _payload_condition(text: str) -> tuple[list[str], list[Any]]:
    """The path and the values ``text`` (``a.b=value``) asks for; malformed: refused."""
    path_text, equals, value_text = text.partition("=")
    path = path_text.strip().split(".")
    if (
        not equals
        or len(text) > PAYLOAD_LENGTH
        or len(path) > PAYLOAD_DEPTH
        or not all(field.strip() for field in path)
    ):
        raise InvalidInput(
            f"The payload filter {text[:80]!r} is not field=value: type a field name (or a "
            f"path of up to {PAYLOAD_DEPTH} names joined by dots, like customer.id), an "
            "equals sign and the value, e.g. customer.id=42.",
            code="listing-filter-invalid",
        )
    path = [field.strip() for field in path]
    value_text = value_text.strip()
    try:
        parsed = json.loads(value_text, parse_constant=_no_constant, parse_float=_finite)
    except ValueError:
        return path, [value_text]
    return path, [parsed] if isinstance(parsed, str) else [parsed, value_text]


def _no_constant(name: str) -> Any:
    """``NaN`` and ``Infinity`` are no JSON values: such a value is matched as text."""
    raise ValueError(name)


def _finite(text: str) -> float:
    """A number too large for a float (``1e999``) is matched as text."""
    number = float(text)
    if number in (float("inf"), float("-inf")):
        raise ValueError(text)
    return number
