"""Ingest's records set aside in the admin: the dropped and errored records, filtered by
pipeline, outcome and reason, replayed by reason after a fix (with a reason, through
``litejobs.ingest.operations.replay``); and the overflow events of full buffers.

A set-aside record's key and payload are the outside data itself: only users who may replay
(the change permission on set-aside records) see them, never the values of the pipeline's
sensitive fields; viewers see the payload's field names, and where and why the record was set
aside.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from ..admin.base import (
    ACTION_LIMIT,
    ChoiceFilter,
    NamedFilter,
    ReadOnlyAdmin,
    acted_by,
    admin_page,
    refused_error,
)
from ..admin.jobs import CappedCountPaginator
from ..admin.reasons import ReasonForm
from ..core.enums import IngestOutcome
from ..core.payloads import Scrubber, redact
from ..exceptions import LitejobsError
from ..models import OverflowEvent, SetAsideRecord
from . import operations
from .declarations import pipelines

REPLAY_TEMPLATE = "admin/litejobs/ingest/replay_confirm.html"
#: What a viewer without the change permission reads instead of a record's values.
HIDDEN = "hidden: needs the change permission on set-aside records"
#: What is read instead of a record's values when its pipeline is no longer declared (which
#: of its fields are sensitive is then unknown).
UNDECLARED = "hidden: its pipeline is no longer declared"


class PipelineFilter(NamedFilter):
    """Filter by pipeline; the choices are the declared pipelines (no DISTINCT over rows)."""

    title = "pipeline"
    parameter_name = field = "pipeline"

    def names(self, request: HttpRequest) -> Iterable[str]:
        """Declared pipelines."""
        return {d.name for d in pipelines.all()}


class ReasonFilter(NamedFilter):
    """Filter by drop reason: the reasons of the selected pipeline's set (of every declared
    pipeline's when none is selected)."""

    title = "reason"
    parameter_name = field = "reason"

    def names(self, request: HttpRequest) -> Iterable[str]:
        """The declared reason values."""
        chosen = request.GET.get(PipelineFilter.parameter_name)
        declared = [pipelines[chosen]] if chosen and chosen in pipelines else pipelines.all()
        return {str(r.value) for d in declared for r in d.drop_reasons}


class ReplayedFilter(ChoiceFilter):
    """Waiting for a replay, or replayed already."""

    title = "replayed"
    parameter_name = "replayed"

    def options(self, request: HttpRequest) -> list[tuple[str, str]]:
        """The two states."""
        return [("no", "not yet"), ("yes", "replayed")]

    def rows(self, value: str) -> Q:
        """Records in the selected state."""
        if value in ("no", "yes"):
            return Q(replayed_at__isnull=value == "no")
        return Q()


@admin.register(SetAsideRecord)
class SetAsideRecordAdmin(ReadOnlyAdmin):
    """Dropped and errored records, filtered by pipeline, outcome and reason; replayed by
    reason after a fix, with a reason. Keys and payloads only for users who may replay, and
    never the values of the pipeline's sensitive fields."""

    list_display = (
        "id",
        "pipeline",
        "outcome",
        "reason",
        "step",
        "attempts",
        "set_aside_at",
        "replayed_at",
    )
    list_filter = (PipelineFilter, "outcome", ReasonFilter, ReplayedFilter)
    paginator = CappedCountPaginator
    show_full_result_count = False
    list_per_page = 50
    actions = ("replay_reasons",)
    readonly_fields = (
        "id",
        "pipeline",
        "key",
        "outcome",
        "reason",
        "step",
        "error",
        "attempts",
        "set_aside_at",
        "replayed_at",
        "key_shown",
        "error_shown",
        "payload_shown",
        "payload_fields",
    )

    def get_list_display(self, request: HttpRequest) -> tuple[str, ...]:
        """The key column only for users who may see the records' values."""
        shown = tuple(self.list_display)
        operator = self.has_operate_permission(request)
        return (*shown[:2], "key_shown", *shown[2:]) if operator else shown

    def get_search_fields(self, request: HttpRequest) -> tuple[str, ...]:
        """An exact key, for users who may see keys (a search would tell a viewer one)."""
        return ("=key",) if self.has_operate_permission(request) else ()

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        """Where and why; the key and the payload for users who may replay, the payload's
        field names for the others."""
        where = ("id", "pipeline", "outcome", "reason", "step", "error_shown", "attempts")
        times = ("set_aside_at", "replayed_at")
        if self.has_operate_permission(request):
            return (*where[:2], "key_shown", *where[2:], *times, "payload_shown")
        return (*where, *times, "payload_fields")

    @admin.display(description="payload")
    def payload_shown(self, obj: SetAsideRecord) -> str:
        """The record as it was fed, the values of the pipeline's sensitive fields redacted
        (only its field names when the pipeline is no longer declared)."""
        sensitive = _sensitive(obj)
        if sensitive is None:
            return _fields(obj, UNDECLARED)
        text = json.dumps(redact(obj.payload, sensitive), indent=2, sort_keys=True)
        return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', text)

    @admin.display(description="payload")
    def payload_fields(self, obj: SetAsideRecord) -> str:
        """The record's field names, without their values."""
        return _fields(obj, HIDDEN)

    @admin.action(
        description="Replay every waiting record of the selected records' reasons",
        permissions=["operate"],
    )
    def replay_reasons(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
        """Confirm with a reason, then ``operations.replay`` each (pipeline, reason) the selection
        holds: a replay feeds back every record of that reason not replayed yet, selected or
        not."""
        hidden = [
            ("action", "replay_reasons"),
            ("select_across", request.POST.get("select_across", "0")),
            *((ACTION_CHECKBOX_NAME, pk) for pk in request.POST.getlist(ACTION_CHECKBOX_NAME)),
        ]
        cancel = reverse(f"{self.admin_site.name}:litejobs_setasiderecord_changelist")
        return confirm_replay(self, request, _groups(queryset), hidden, cancel=cancel)

    def _scrubbed(self, obj: SetAsideRecord, text: str) -> str:
        """``text`` (the key, the error) without the values of the pipeline's sensitive
        fields (hidden whole when the pipeline is no longer declared)."""
        sensitive = _sensitive(obj)
        return UNDECLARED if sensitive is None else Scrubber(obj.payload, sensitive)(text)

    @admin.display(description="key")
    def key_shown(self, obj: SetAsideRecord) -> str:
        """The record's key, without the values of the pipeline's sensitive fields."""
        return self._scrubbed(obj, obj.key)

    @admin.display(description="error")
    def error_shown(self, obj: SetAsideRecord) -> str:
        """Why it errored, without the values of the pipeline's sensitive fields."""
        return self._scrubbed(obj, obj.error) or "-"


def _fields(obj: SetAsideRecord, hidden: str) -> str:
    """The record's field names, and why their values are hidden."""
    names = sorted(obj.payload) if isinstance(obj.payload, dict) else []
    return f"fields {', '.join(names) or '-'} (values {hidden})"


def _sensitive(obj: SetAsideRecord) -> tuple[str, ...] | None:
    """The sensitive fields of the record's pipeline; None when no pipeline of that name is
    declared any more (which of its fields were sensitive is then unknown)."""
    declaration = pipelines.get(obj.pipeline)
    return None if declaration is None else declaration.sensitive


def confirm_replay(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    groups: list[tuple[str, str]],
    hidden: list[tuple[str, str]],
    *,
    cancel: str,
) -> HttpResponse | None:
    """The replay's confirmation (how many records each (pipeline, reason) feeds back, and
    the reason the operator gives), or, once confirmed with a reason, each replay (kept in
    the operator action log) and ``None``."""
    form = ReasonForm(request.POST if "apply" in request.POST else None)
    if form.is_valid():
        by, user_id = acted_by(request), request.user.pk
        for pipeline, drop_reason in groups:
            try:
                outcome = operations.replay(
                    pipeline,
                    drop_reason,
                    by=by,
                    reason=form.cleaned_data["reason"],
                    user_id=user_id,
                )
            except LitejobsError as error:
                refused_error(request, error)
            else:
                model_admin.message_user(request, outcome.message, messages.SUCCESS)
        return None
    waiting = {name: operations.replayable(name) for name in {p for p, _ in groups}}
    context = {
        "groups": [(p, r, waiting[p].get(r, 0)) for p, r in groups],
        "hidden": hidden,
        "form": form,
        "cancel_url": cancel,
    }
    return admin_page(model_admin, request, REPLAY_TEMPLATE, "Replay set-aside records", context)


def _groups(queryset: QuerySet[Any]) -> list[tuple[str, str]]:
    """The (pipeline, reason or ``errored``) pairs of the selected records."""
    pairs = queryset.order_by().values_list("pipeline", "outcome", "reason").distinct()
    return sorted(
        {
            (pipeline, operations.ERRORED if outcome == IngestOutcome.ERRORED else reason)
            for pipeline, outcome, reason in pairs[:ACTION_LIMIT]
        }
    )


# Overflow events ---------------------------------------------------------------------------


@admin.register(OverflowEvent)
class OverflowEventAdmin(ReadOnlyAdmin):
    """Feeds that found a buffer full, and what its declared overflow did."""

    list_display = ("at", "pipeline", "overflow", "buffered", "capacity", "fed", "dropped")
    list_filter = (PipelineFilter, "overflow")
    paginator = CappedCountPaginator
    show_full_result_count = False
    list_per_page = 50
    actions = None
    fields = ("id", "pipeline", "overflow", "at", "capacity", "buffered", "fed", "dropped")
    readonly_fields = fields
