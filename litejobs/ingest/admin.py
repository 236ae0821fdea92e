"""Ingest pipelines in the admin: what each declared pipeline took in, dropped (per reason,
per hour) and errored, how full its buffer is, its overflows, its file imports and their
error reports; the records set aside, replayed by reason after a fix; file imports started.

Pipelines are declarations, not rows, so the pipelines' overview takes the place of the
hourly counts' change list (as the queue overview does for queue switches), and each
pipeline has a page of its own under it. Everything is read through
``litejobs.ingest.operations`` and every action goes through its verbs, the ones the CLI calls.

Who sees what: staff with a model's view permission see its pages (the pipelines need the
view permission on ingest counts). Replaying needs the change permission on set-aside
records, starting an import the add permission on file imports. A set-aside record's key
and payload are the outside data itself: only users who may replay (change permission) see
them; viewers see the payload's field names, and where and why the record was set aside.
An import's error report says where (line, byte offset, field) and why (a code): it never
holds a value.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, cast
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import PermissionDenied
from django.db.models import F, Q, QuerySet, Window
from django.db.models.functions import RowNumber
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html

from ..admin import charts
from ..admin.base import (
    ACTION_LIMIT,
    ChoiceFilter,
    NamedFilter,
    ReadOnlyAdmin,
    RecordInline,
    acted_by,
    admin_page,
    form_refused,
    refused_error,
)
from ..admin.jobs import CappedCountPaginator
from ..admin.reasons import ReasonForm
from ..core import clock
from ..core.durations import format_age
from ..core.enums import IngestOutcome
from ..core.payloads import Scrubber, redact
from ..exceptions import LitejobsError
from ..models import ImportRefusal, ImportRun, IngestCount, OverflowEvent, SetAsideRecord
from . import operations
from .declarations import pipelines
from .errors import PipelineNotFound
from .files import NAME_MAX

OVERVIEW_TEMPLATE = "admin/litejobs/ingest/pipelines.html"
PIPELINE_TEMPLATE = "admin/litejobs/ingest/pipeline.html"
IMPORT_TEMPLATE = "admin/litejobs/ingest/import_form.html"
REPLAY_TEMPLATE = "admin/litejobs/ingest/replay_confirm.html"
#: The spans the drops chart offers, in hours; the first is the default.
CHART_HOURS = (24, 48)
#: What a viewer without the change permission reads instead of a record's values.
HIDDEN = "hidden: needs the change permission on set-aside records"
#: What is read instead of a record's values when its pipeline is no longer declared (which
#: of its fields are sensitive is then unknown).
UNDECLARED = "hidden: its pipeline is no longer declared"


def _hour_label(hour: datetime) -> str:
    return timezone.localtime(hour).strftime("%d %b %H:00")


def _short_hour(hour: datetime) -> str:
    return timezone.localtime(hour).strftime("%H:00")


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


# Pipelines ---------------------------------------------------------------------------------


@admin.register(IngestCount)
class PipelineAdmin(ReadOnlyAdmin):
    """Every declared pipeline at a glance, and a page per pipeline."""

    actions = None

    def get_urls(self) -> list[URLPattern]:
        """The pipeline pages, beside the overview."""
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "pipeline/<path:name>/",
                self.admin_site.admin_view(self.pipeline_view),
                name="{}_{}_pipeline".format(*info),
            ),
            *super().get_urls(),
        ]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The overview: each pipeline's freshness, buffer, totals and last overflow."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        now = clock.now()
        rows = [
            {
                "summary": found,
                "url": pipeline_url(self.admin_site.name, found.name),
                "overflow_age": _age(now, found.last_overflow),
            }
            for found in operations.summaries(now=now)
        ]
        context = {"links": _links(request), "rows": rows, **(extra_context or {})}
        return admin_page(self, request, OVERVIEW_TEMPLATE, "Pipelines", context)

    def pipeline_view(self, request: HttpRequest, name: str) -> HttpResponse:
        """A pipeline's page (GET) and its replay buttons (POST)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            return self._replay(request, name)
        now = clock.now()
        try:
            found = operations.details(name, now)
        except PipelineNotFound as error:
            raise Http404(str(error)) from error
        hours = _hours(request)
        context = {
            "links": _links(request),
            "details": found,
            "summary": found.summary,
            "reasons": _reason_rows(request, found),
            "chart": _drops_chart(found, hours, now),
            "hours": hours,
            "spans": [(h, f"?{urlencode({'hours': h})}") for h in CHART_HOURS],
            "imports": [(run, operations.progress(run)) for run in found.imports],
            "overflows": found.overflows,
            "overflow_age": _age(now, found.summary.last_overflow),
            "oldest_age": format_age(found.summary.oldest_age or timedelta(0)),
            "page_age": _age(now, found.summary.last_page),
            "timezone_name": timezone.get_current_timezone_name(),
            "overview_url": reverse(f"{self.admin_site.name}:litejobs_ingestcount_changelist"),
            "import_url": _import_url(self.admin_site.name, name),
        }
        return admin_page(self, request, PIPELINE_TEMPLATE, f"Pipeline {name}", context)

    def _replay(self, request: HttpRequest, name: str) -> HttpResponse:
        """A reason's *Replay* button: confirm with the records it feeds back and a reason,
        then replay, and back to the pipeline's page."""
        if not request.user.has_perm("litejobs.change_setasiderecord"):
            raise PermissionDenied
        back = pipeline_url(self.admin_site.name, name)
        drop_reason = request.POST.get("replay", "")
        try:
            declaration = pipelines[name]
            if drop_reason != operations.ERRORED:
                declaration.reason(drop_reason)
        except LitejobsError as error:
            refused_error(request, error)
            return HttpResponseRedirect(back)
        hidden = [("replay", drop_reason)]
        confirmed = confirm_replay(self, request, [(name, drop_reason)], hidden, cancel=back)
        return confirmed or HttpResponseRedirect(back)


def pipeline_url(site: str, name: str) -> str:
    """The admin page of pipeline ``name``."""
    return reverse(f"{site}:litejobs_ingestcount_pipeline", kwargs={"name": name})


def _import_url(site: str, name: str) -> str:
    url = reverse(f"{site}:litejobs_importrun_add")
    return f"{url}?{urlencode({'pipeline': name})}"


def _links(request: HttpRequest) -> dict[str, bool]:
    """What this user may open or do from a pipeline's page."""
    user = request.user
    return {
        "set_aside": user.has_perm("litejobs.view_setasiderecord"),
        "overflows": user.has_perm("litejobs.view_overflowevent"),
        "imports": user.has_perm("litejobs.view_importrun"),
        "replay": user.has_perm("litejobs.change_setasiderecord"),
        "start_import": user.has_perm("litejobs.add_importrun"),
    }


def _age(now: datetime, event: OverflowEvent | None) -> str:
    return "" if event is None else format_age(now - event.at)


def _hours(request: HttpRequest) -> int:
    try:
        hours = int(request.GET.get("hours", ""))
    except ValueError:
        return CHART_HOURS[0]
    return hours if hours in CHART_HOURS else CHART_HOURS[0]


def _reason_rows(request: HttpRequest, found: operations.Details) -> list[dict[str, Any]]:
    """Each reason of the set (and the errored records): its total, the records waiting for
    a replay, and the set-aside listing of them."""
    listing = reverse("admin:litejobs_setasiderecord_changelist")
    name = found.summary.name
    rows = [
        {
            "reason": reason,
            "total": total,
            "waiting": found.replayable.get(reason, 0),
            "url": f"{listing}?{urlencode({'pipeline': name, 'reason': reason})}",
        }
        for reason, total in found.summary.dropped.items()
    ]
    rows.append(
        {
            "reason": operations.ERRORED,
            "total": found.summary.errored,
            "waiting": found.replayable.get(operations.ERRORED, 0),
            "url": f"{listing}?{urlencode({'pipeline': name, 'outcome': operations.ERRORED})}",
        }
    )
    return rows


def _drops_chart(found: operations.Details, hours: int, now: datetime) -> charts.Chart:
    declaration = found.summary.declaration
    columns = operations.drops_per_hour(declaration, hours, now)
    return charts.stacked_bars(
        [(_hour_label(hour), counts) for hour, counts in columns],
        [str(reason.value) for reason in declaration.drop_reasons],
        title=f"Records of {declaration.name} dropped per reason per hour, last {hours} hours",
        short_labels=[_short_hour(hour) for hour, _ in columns],
        label_every=3 if hours <= 24 else 6,
    )


# Records set aside -------------------------------------------------------------------------


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


# File imports ------------------------------------------------------------------------------


class RefusalInline(RecordInline):
    """An import's refused rows, the first ``operations.REPORT_ROWS`` by offset: where and why
    (a code), never the value."""

    model = ImportRefusal
    verbose_name = "refused row"
    verbose_name_plural = f"error report: refused rows (the first {operations.REPORT_ROWS})"
    empty_text = "No refused rows."
    parent_view_permission = "litejobs.view_importrun"
    fields = ("line", "offset", "field", "code")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """The first rows of each run, by offset (a run may refuse millions)."""
        first = Window(RowNumber(), partition_by=[F("run")], order_by=[F("offset"), F("id")])
        rows: QuerySet[Any] = super().get_queryset(request)
        first_rows: QuerySet[Any] = (
            rows.annotate(position=first)
            .filter(position__lte=operations.REPORT_ROWS)
            .order_by("offset", "id")
        )
        return first_rows


class ImportForm(ReasonForm):
    """A file import as an operator starts it: one of the files a pipeline declares, and why.
    Only pipelines that declare their files and columns are offered, each with where its
    files are."""

    pipeline = forms.ChoiceField(
        help_text="The pipeline whose steps the file's records go through, and where its "
        "files are (storage: folder)."
    )
    file = forms.CharField(
        max_length=NAME_MAX,
        help_text="The file's name in the pipeline's storage, under its folder, such as "
        "feeds/catalog/2026-06.csv.",
    )
    format = forms.ChoiceField(
        choices=[
            ("csv", "CSV (a header row naming the declared columns)"),
            ("ndjson", "NDJSON (one JSON object per line)"),
        ]
    )

    field_order = ("pipeline", "file", "format", "reason")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["pipeline"]).choices = [
            (d.name, f"{d.name} ({d.files})")
            for d in pipelines.all()
            if d.files is not None and d.columns
        ]


@admin.register(ImportRun)
class ImportRunAdmin(ReadOnlyAdmin):
    """File imports with their progress and error report; started here by users with the
    add permission on file imports."""

    list_display = (
        "id",
        "pipeline",
        "file",
        "format",
        "state",
        "progress_shown",
        "accepted",
        "dropped",
        "errored",
        "refused",
        "created_at",
        "finished_at",
    )
    list_filter = (PipelineFilter, "state")
    paginator = CappedCountPaginator
    show_full_result_count = False
    list_per_page = 50
    actions = None
    inlines = (RefusalInline,)
    fields = (
        "id",
        "pipeline",
        "file",
        "format",
        "state",
        "progress_shown",
        "line",
        "accepted",
        "dropped",
        "errored",
        "refused",
        "refusals_by_code",
        "error",
        "created_at",
        "finished_at",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Starting an import needs the add permission on file imports."""
        return request.user.has_perm("litejobs.add_importrun")

    @admin.display(description="progress")
    def progress_shown(self, obj: ImportRun) -> str:
        """Bytes read of the file's size, as a percentage."""
        done = operations.progress(obj)
        size = f"{obj.offset} / {obj.size} bytes" if obj.size else f"{obj.offset} bytes"
        return size if done is None else f"{done:.0f}% ({size})"

    @admin.display(description="refused rows per code")
    def refusals_by_code(self, obj: ImportRun) -> str:
        """How many rows each refusal code covers."""
        report = operations.refusal_report(obj, limit=0)
        return ", ".join(f"{code}: {n}" for code, n in report["by_code"].items()) or "-"

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The import form (GET, ``?pipeline=`` preselects one) and its start (POST)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            form = ImportForm(request.POST)
            run = self._start(request, form) if form.is_valid() else None
            if run is not None:
                change = reverse(f"{self.admin_site.name}:litejobs_importrun_change", args=[run.pk])
                return HttpResponseRedirect(change)
        else:
            form = ImportForm(initial={"pipeline": request.GET.get("pipeline", "")})
        context = {"form": form, **(extra_context or {})}
        return admin_page(self, request, IMPORT_TEMPLATE, "Import a file", context)

    def _start(self, request: HttpRequest, form: ImportForm) -> ImportRun | None:
        data = form.cleaned_data
        try:
            run = operations.start_import(
                data["pipeline"],
                data["file"],
                format=data["format"],
                by=acted_by(request),
                reason=data["reason"],
                user_id=request.user.pk,
            )
        except LitejobsError as error:
            form_refused(form, error)
            return None
        self.message_user(
            request,
            f"Import {run.pk} of {run.file!r} through {run.pipeline!r} is started: a worker of "
            "the ingest queue reads it; this page shows its progress and error report.",
            messages.SUCCESS,
        )
        return run
