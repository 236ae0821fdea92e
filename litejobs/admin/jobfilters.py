"""The job listing's filters, each meeting an index: the state, queue and job choices, and the
boxes typed into (tenant, key, job ids, created and finished dates; the payload's is
``payloadfilter``).

Every filter on a job column is written as two arms, finished jobs and live jobs
(``by_life``): the finished arm meets a partial index over finished jobs only (the claim never
writes to it), the live arm meets the small live-key index. A value a filter cannot take is
refused with a coded message above an empty list, never a 500.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import datetime, time
from typing import Any, cast

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.timezone import get_current_timezone, is_naive, make_aware

from ..core.enums import LIVE, TERMINAL, JobState
from ..exceptions import InvalidInput, LitejobsError
from ..jobs import catalog
from ..models import QueueState
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
