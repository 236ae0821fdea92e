"""Reports and exports in the admin: the runs the worker writes (their progress, a Download
button once done, cancel), a page to request a report, each report's limits as setting rows an
operator changes without a deploy, and the audit record of every read.

Who sees what: a superuser sees every run and audit record; any other user sees those of the
reports whose permission they hold, for the tenant each report's ``tenant=`` gives them, and
nothing of the others (another tenant's run page is a 404). Requesting goes through
``Report.request`` and downloading through ``litejobs.reports.views.download``, which check
the permission and the tenant again. Cancelling needs the change permission on report runs,
changing a report's limits the change permission on report limits; both ask why, and go to
the operator action log (``litejobs.reports.operations``) with who, why and, for limits, each
value's old and new.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from ..admin.base import ACTION_LIMIT, AdminPages, ReadOnlyAdmin, acted_by, form_refused, report
from ..admin.jobs import CappedCountPaginator
from ..admin.reasons import ask_reason, ask_reason_on_page, selected_hidden
from ..conf import settings
from ..core import clock, times
from ..core.durations import format_age, format_duration, parse_duration
from ..core.enums import REPORT_LIVE, ReportState
from ..core.errors import InvalidInput
from ..core.sizes import format_size, parse_size
from ..exceptions import LitejobsError
from ..jobs.actionlog import REASON_MAX, Actor
from ..models import ReportAudit, ReportLimits, ReportRun
from . import auditing, limits, operations, requesting, views
from .declarations import DURATION_MOST, Declaration, reports
from .errors import ReportDenied
from .output import ReportOutput
from .params import VALUE_MAX, widest

REQUEST_TEMPLATE = "admin/litejobs/reportrun/request.html"
#: The stylesheet of the reports' pages: state colours, the Download and Cancel buttons.
STYLE = {"all": ("litejobs/reports.css",)}
#: Where the set of reports a user may read is kept for the rest of the request.
_READABLE = "_litejobs_report_tenants"
#: What the reason form says before a cancel.
CANCEL_INTRO = (
    "A queued run never starts; a running one is stopped by its worker at its next page. "
    "Either way what it wrote is removed and nothing is offered. Your reason goes to the "
    "operator action log with your name."
)


# Who reads what ----------------------------------------------------------------------------


def readable(request: HttpRequest) -> dict[str, str]:
    """The reports this user may read, each with the tenant its ``tenant=`` gives them (the
    same checks as a request and a download: the report's permission, a known tenant)."""
    found: dict[str, str] | None = getattr(request, _READABLE, None)
    if found is None:
        found = {}
        for declaration in reports.all():
            try:
                requesting.allowed(declaration, request.user)
                found[declaration.name] = requesting.tenant_of(declaration, request.user)
            except ReportDenied:
                continue
        setattr(request, _READABLE, found)
    return found


def scoped(request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
    """The rows this user may see: every row for a superuser; else the rows of the reports
    they may read, of their tenant for each (none of undeclared reports)."""
    if request.user.is_superuser:
        return queryset
    match = Q(pk__in=[])
    for name, tenant in readable(request).items():
        match |= Q(report=name, tenant=tenant)
    return queryset.filter(match)


def refusal(declaration: Declaration, user: Any) -> LitejobsError | None:
    """Why this user may not request the report (the refusal ``request`` would raise before
    reading anything), or None."""
    try:
        requesting.complete(declaration)
        requesting.allowed(declaration, user)
        requesting.tenant_of(declaration, user)
    except LitejobsError as error:
        return error
    return None


class ReportFilter(admin.SimpleListFilter):
    """Filter by report; the choices are the declared reports this user may read."""

    title = "report"
    parameter_name = "report"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, str]]:
        """Every declared report for a superuser, the readable ones for others."""
        if request.user.is_superuser:
            names = {d.name for d in reports.all()}
        else:
            names = set(readable(request))
        if self.value():
            names.add(str(self.value()))
        return [(name, name) for name in sorted(names)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        """Rows of the selected report."""
        return queryset.filter(report=self.value()) if self.value() else queryset


class ScopedAdmin(ReadOnlyAdmin):
    """Records of reports, each user seeing those of their own tenant (``scoped``); a record
    out of scope is not found (404), as if it did not exist."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """The records this user may see."""
        return scoped(request, super().get_queryset(request))

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Any:
        """The record, or a 404 when it is out of this user's scope (or does not exist)."""
        found = super().get_object(request, object_id, from_field)
        if found is None:
            raise Http404(f"No {self.opts.verbose_name} {object_id} that you may see.")
        return found


def _instant(value: datetime) -> str:
    return times.when(value)


def _relative(value: datetime | None) -> str:
    """An instant as an age from now ("5m ago", "in 55m"), the instant itself on hover."""
    if value is None:
        return "-"
    now = clock.now()
    age = format_age(abs(now - value))
    text = f"{age} ago" if value <= now else f"in {age}"
    return format_html('<span title="{}" class="litejobs-nowrap">{}</span>', _instant(value), text)


def _parameters(value: dict[str, Any]) -> str:
    """A run's or a read's parameters as ``name=value`` pairs."""
    return ", ".join(f"{name}={value[name]}" for name in value) or "-"


# Runs --------------------------------------------------------------------------------------


def offered(run: ReportRun, tenants: dict[str, str], now: datetime) -> bool:
    """Whether this user may download the run's output now: done, not expired, and a report
    they read for the run's tenant (what the download view checks)."""
    return (
        run.state == ReportState.DONE
        and run.expires_at is not None
        and run.expires_at > now
        and run.removed_at is None
        and tenants.get(run.report) == run.tenant
    )


@dataclass(frozen=True)
class Outcome:
    """What an action did, as the admin tells it."""

    message: str


def cancelling(request: HttpRequest, reason: str) -> Any:
    """The verb ``report`` applies to each run: cancel it, logged with who and ``reason``."""
    user_id = request.user.pk

    def cancel(run: ReportRun, *, by: str) -> Outcome:
        operations.cancel(run, Actor(by, user_id, reason))
        return Outcome(
            f"Report run #{run.pk} of {run.report} is cancelled: the worker stops at its next "
            "page and removes what it wrote."
        )

    return cancel


@admin.register(ReportRun)
class ReportRunAdmin(ScopedAdmin):
    """Report runs, newest first, with their progress and a Download button once done;
    cancelled by action or from a run's page; a report requested from "Request a report"."""

    list_display = (
        "__str__",
        "state_shown",
        "progress_shown",
        "rows_shown",
        "bytes_shown",
        "requester_shown",
        "tenant",
        "created_shown",
        "expires_shown",
    )
    list_filter = (ReportFilter, "state")
    paginator = CappedCountPaginator
    show_full_result_count = False
    list_per_page = 50
    ordering = ("-id",)
    actions = ("cancel_runs",)
    change_list_template = "admin/litejobs/reportrun/change_list.html"
    change_form_template = "admin/litejobs/reportrun/change_form.html"
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "id",
                    "report",
                    "state_shown",
                    "requester_name",
                    "tenant",
                    "format",
                    "parameters_shown",
                )
            },
        ),
        (
            "Progress",
            {"fields": ("progress_shown", "estimated_rows", "rows_shown", "bytes_shown", "parts")},
        ),
        ("Output", {"fields": ("storage", "output_path", "expires_at", "removed_at")}),
        (
            "Times",
            {"fields": ("created_at", "started_at", "finished_at", "cancelled_by", "job_link")},
        ),
        ("Stop or error", {"fields": ("stop_reason", "error")}),
    )
    readonly_fields = cast(
        tuple[str, ...], tuple(f for _, options in fieldsets for f in options["fields"])
    )

    class Media:
        css = STYLE

    def get_list_display(self, request: HttpRequest) -> tuple[Any, ...]:
        """The columns, and a Download button (beside the size) where this user may download
        the output."""
        shown = tuple(self.list_display)
        at = shown.index("bytes_shown") + 1
        return (*shown[:at], self._download_column(request), *shown[at:])

    def _download_column(self, request: HttpRequest) -> Any:
        tenants = readable(request)
        now = clock.now()

        @admin.display(description="download")
        def download(run: ReportRun) -> str:
            if not offered(run, tenants, now):
                return "-"
            return format_html(
                '<a class="button litejobs-download" href="{}">Download</a>', run.download_url()
            )

        return download

    # Columns -------------------------------------------------------------------------------

    @admin.display(description="state", ordering="state")
    def state_shown(self, obj: ReportRun) -> str:
        """The state, with the code a stopped or failed run ended with."""
        reason = (
            format_html('<br><small class="litejobs-nowrap">{}</small>', obj.stop_reason)
            if obj.stop_reason
            else ""
        )
        return format_html(
            '<span class="litejobs-report-state litejobs-report-{}" title="{}">{}</span>{}',
            obj.state,
            ReportState(obj.state).label,
            obj.state,
            reason,
        )

    @admin.display(description="rows", ordering="row_count")
    def rows_shown(self, obj: ReportRun) -> str:
        """Rows written so far."""
        return f"{obj.row_count:,}"

    @admin.display(description="requester", ordering="requester_name")
    def requester_shown(self, obj: ReportRun) -> str:
        """Who asked for it."""
        return obj.requester_name or "-"

    @admin.display(description="created", ordering="created_at")
    def created_shown(self, obj: ReportRun) -> str:
        """How long ago it was requested (the instant on hover)."""
        return _relative(obj.created_at)

    @admin.display(description="expires", ordering="expires_at")
    def expires_shown(self, obj: ReportRun) -> str:
        """When its output is removed (the instant on hover)."""
        return _relative(obj.expires_at)

    @admin.display(description="progress")
    def progress_shown(self, obj: ReportRun) -> str:
        """Percent of the estimated rows written so far, or the rows so far while the
        estimate is unknown."""
        return obj.progress_text()

    @admin.display(description="bytes", ordering="bytes")
    def bytes_shown(self, obj: ReportRun) -> str:
        """The output's size as people read it."""
        return format_size(obj.bytes)

    @admin.display(description="parameters")
    def parameters_shown(self, obj: ReportRun) -> str:
        """The range and filters it was requested with."""
        return _parameters(obj.parameters)

    @admin.display(description="job")
    def job_link(self, obj: ReportRun) -> str:
        """The worker's job that runs it."""
        if obj.job_id is None:
            return "-"
        url = reverse(f"{self.admin_site.name}:litejobs_job_change", args=[obj.job_id])
        return format_html('<a href="{}">job {}</a>', url, obj.job_id)

    # Pages ---------------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        """The request page, a run's cancel button and the download of signed links (for
        projects whose URLconf does not include ``litejobs.urls``)."""
        info = self.opts.app_label, self.opts.model_name
        view = self.admin_site.admin_view
        return [
            path("request/", view(self.request_view), name="{}_{}_request".format(*info)),
            path(
                "download/<str:token>/",
                view(self.download_view),
                name="{}_{}_download".format(*info),
            ),
            path(
                "<path:object_id>/cancel/",
                view(self.cancel_view),
                name="{}_{}_cancel".format(*info),
            ),
            *super().get_urls(),
        ]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The run's page, with its Download and Cancel buttons; reloaded while it runs."""
        run = self.get_object(request, object_id)
        extra = {
            "download_url": (
                run.download_url() if offered(run, readable(request), clock.now()) else ""
            ),
            "can_cancel": run.state in REPORT_LIVE and self.has_operate_permission(request),
            "live": run.state in REPORT_LIVE,
            **(extra_context or {}),
        }
        return super().change_view(request, object_id, form_url, extra)

    def download_view(self, request: HttpRequest, token: str) -> HttpResponseBase:
        """A signed link's download, its refusal pages in this admin site."""
        return views.download(request, token, site=self.admin_site)

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The run page's Cancel button: the reason form, then the cancel."""
        if not self.has_operate_permission(request):
            raise PermissionDenied
        run = self.get_object(request, object_id)
        return ask_reason_on_page(
            self,
            request,
            run,
            title=f"Cancel report run #{run.pk}",
            intro=CANCEL_INTRO,
            apply=lambda reason: report(self, request, cancelling(request, reason), [run]),
        )

    @admin.action(description="Cancel selected report runs (asks why)", permissions=["operate"])
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
        """Ask for a reason, then cancel each selected run that is queued or running; say why
        not for the others."""
        runs = list(queryset[:ACTION_LIMIT])
        return ask_reason(
            self,
            request,
            runs,
            title="Cancel report runs",
            intro=CANCEL_INTRO,
            hidden=selected_hidden("cancel_runs", runs),
            apply=lambda reason: report(self, request, cancelling(request, reason), runs),
        )

    def _run_url(self, run: ReportRun) -> str:
        return reverse(f"{self.admin_site.name}:litejobs_reportrun_change", args=[run.pk])

    # Requesting a report -------------------------------------------------------------------

    def request_view(self, request: HttpRequest) -> HttpResponse:
        """The reports this user may run (GET), a report's form (``?report=``) and its
        request (POST): the output itself when it fits the request budget, else its run's
        page."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        name = request.GET.get("report", "")
        if not name:
            return self._render_request(request, "Request a report", choices=_choices(request))
        declaration = reports.get(name)
        if declaration is None:
            raise Http404(f"No report named {name!r} is declared.")
        refused = refusal(declaration, request.user)
        if refused is not None:
            if request.method == "POST":  # a request, refused: audited and logged
                auditing.refused(declaration, request.user, "", refused)
            shown = {"message": refused.args[0], "code": refused.code}
            return self._render_request(
                request, f"Request {name}", declaration=declaration, refusal=shown
            )
        form = RequestForm(
            request.POST if request.method == "POST" else None,
            declaration=declaration,
            limits=limits.current(declaration),
        )
        answer = self._requested(request, declaration, form)
        if answer is not None:
            return answer
        return self._render_request(request, f"Request {name}", declaration=declaration, form=form)

    def _requested(
        self, request: HttpRequest, declaration: Declaration, form: RequestForm
    ) -> HttpResponse | None:
        """The download or the redirect to the queued run; None while the form has errors."""
        if not form.is_bound or not form.is_valid():
            return None
        try:
            answer = requesting.request(declaration, request.user, form.params())
        except LitejobsError as error:
            form_refused(form, error)
            return None
        if isinstance(answer, ReportOutput):
            return answer.response()
        self.message_user(
            request,
            f"Report run #{answer.pk} of {answer.report} requested: the worker writes it; this "
            "page shows its progress.",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(self._run_url(answer))

    def _render_request(self, request: HttpRequest, title: str, **context: Any) -> HttpResponse:
        request.current_app = self.admin_site.name
        choosing = reverse(f"{self.admin_site.name}:litejobs_reportrun_request")
        page = {
            **self.admin_site.each_context(request),
            "title": title,
            "subtitle": None,
            "opts": self.opts,
            "request_url": choosing,
            **(
                {"parent_url": choosing, "parent_title": "Request a report"}
                if context.get("declaration")
                else {}
            ),
            **context,
        }
        return TemplateResponse(request, REQUEST_TEMPLATE, page)


def _choices(request: HttpRequest) -> list[dict[str, Any]]:
    """The declared reports this user may run, with what a request of each takes."""
    runnable = [d for d in reports.all() if refusal(d, request.user) is None]
    rows = ReportLimits.objects.using(settings.DATABASE).filter(
        report__in=[d.name for d in runnable]
    )
    ranges = {row.report: row.max_range for row in rows}
    return [
        {
            "declaration": declaration,
            "max_range": _duration(ranges.get(declaration.name, declaration.limits.max_range)),
            "filters": ", ".join(declaration.filters) or "-",
            "audit": declaration.audit,
        }
        for declaration in runnable
    ]


class RequestForm(forms.Form):
    """A report's request as its declaration takes it: a date range (required when its
    limits bound the range) and one text per declared filter."""

    def __init__(
        self, *args: Any, declaration: Declaration, limits: ReportLimits, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        longest = limits.max_range
        end = (
            f"The last day read (at most {format_duration(longest)} with both ends counted: "
            "its max_range limit)."
            if longest is not None
            else "The last day read (give both, or neither to read every day)."
        )
        self.fields["start"] = _day(longest is not None, "The first day read.")
        self.fields["end"] = _day(longest is not None, end)
        for name in declaration.filters:
            self.fields[name] = forms.CharField(
                required=False,
                max_length=VALUE_MAX,
                help_text=f"Only the rows whose {name} is this value; empty: every {name}.",
            )
        if longest is not None and not self.is_bound:
            self.initial = widest(longest, clock.now())

    def params(self) -> dict[str, date | str]:
        """The parameters given (empty fields left out), for ``Report.request``."""
        return {name: value for name, value in self.cleaned_data.items() if value not in (None, "")}


def _day(required: bool, help_text: str) -> forms.DateField:
    return forms.DateField(
        required=required,
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        help_text=help_text,
    )


# Limits ------------------------------------------------------------------------------------


def _duration(value: timedelta | None) -> str:
    return "-" if value is None else format_duration(value)


#: A duration as ``format_duration`` writes it: one or more amounts with their units.
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")


class DurationInput(forms.DurationField):
    """A duration as people write it ("31d", "5m", "1h30m") or as Django reads one
    ("1 02:00:00", "P1DT2H"); more than zero, and at most ``most``."""

    def __init__(self, *, most: timedelta, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.most = most

    def prepare_value(self, value: Any) -> Any:
        """A stored duration as people write it."""
        return format_duration(value) if isinstance(value, timedelta) else value

    def to_python(self, value: Any) -> timedelta | None:
        """The duration typed, in either form."""
        if value in self.empty_values:
            return None
        try:
            found = _written(str(value)) or super().to_python(value)
        except ValidationError:
            found = None
        if found is None or found <= timedelta(0):
            raise ValidationError(
                "Enter a duration of more than zero, such as 31d, 5m or 1h30m (or 1 00:00:00).",
                code="invalid",
            )
        if found > self.most:
            raise ValidationError(
                f"Enter a duration of at most {format_duration(self.most)}.", code="max_value"
            )
        return found


def _written(text: str) -> timedelta | None:
    """A duration as ``format_duration`` writes it ("1h30m"), or None."""
    compact = text.replace(" ", "")
    if not compact or _DURATION_PART.sub("", compact):
        return None
    parts = _DURATION_PART.findall(compact)
    return sum((parse_duration(f"{amount}{unit}") for amount, unit in parts), timedelta(0))


class SizeInput(forms.CharField):
    """A size as people write it ("50MB", "500KB") or a number of bytes."""

    def prepare_value(self, value: Any) -> Any:
        """A stored size as people write it, when that says it exactly."""
        if isinstance(value, int) and parse_size(format_size(value)) == value:
            return format_size(value)
        return value

    def to_python(self, value: Any) -> int | None:  # type: ignore[override]  # bytes, where CharField answers text
        """The number of bytes typed."""
        text = super().to_python(value)
        if not text:
            return None
        try:
            return parse_size(text.strip(), name="max_bytes")
        except InvalidInput as error:
            raise ValidationError(error.args[0]) from None


def _help(name: str) -> str:
    return str(getattr(ReportLimits._meta.get_field(name), "help_text", ""))


class LimitsForm(forms.ModelForm):
    """A report's limits as an operator types them: durations as "31d", sizes as "50MB",
    counts within the bounds a declaration may state."""

    max_range = DurationInput(
        required=False,
        most=DURATION_MOST["max_range"],
        help_text=f"{_help('max_range')} Empty: the report takes no range. Such as 31d.",
    )
    max_rows = forms.IntegerField(min_value=1, max_value=10**10, help_text=_help("max_rows"))
    max_seconds = DurationInput(
        most=DURATION_MOST["max_seconds"], help_text=f"{_help('max_seconds')} Such as 5m."
    )
    max_concurrent = forms.IntegerField(
        min_value=1, max_value=1000, help_text=_help("max_concurrent")
    )
    max_bytes = SizeInput(help_text=f"{_help('max_bytes')} Such as 50MB.")
    lifetime = DurationInput(
        most=DURATION_MOST["lifetime"], help_text=f"{_help('lifetime')} Such as 1h."
    )
    request_budget = forms.IntegerField(
        min_value=1, max_value=100_000, help_text=_help("request_budget")
    )
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        max_length=REASON_MAX,
        help_text="Why you change them: the operator action log keeps it with your name and "
        "each value's old and new.",
    )

    class Meta:
        model = ReportLimits
        fields = operations.SETTINGS


@admin.register(ReportLimits)
class ReportLimitsAdmin(AdminPages):
    """Every declared report's limits (its declaration seeds the row), changed by users with
    the change permission on report limits; a new request and a new run read them."""

    form = LimitsForm
    list_display = (
        "report",
        "range_shown",
        "max_rows_shown",
        "seconds_shown",
        "max_concurrent",
        "bytes_shown",
        "lifetime_shown",
        "request_budget",
        "updated_by",
        "updated_at",
    )
    list_per_page = 100
    actions = None
    editable = (*LimitsForm.Meta.fields, "reason")
    shown = (
        "range_shown",
        "max_rows_shown",
        "seconds_shown",
        "max_concurrent",
        "bytes_shown",
        "lifetime_shown",
        "request_budget",
    )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        """The values as people read them for users who may not change them; for the others,
        only what no one types (the limits themselves are inputs)."""
        fixed = ("report", "declared", "updated_by", "updated_at")
        return fixed if self.has_change_permission(request, obj) else (*fixed, *self.shown)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        """The limits as inputs for users who may change them, as people read them for the
        others; then the declaration's values and who changed the row last."""
        values = self.editable if self.has_change_permission(request, obj) else self.shown
        return ("report", *values, "declared", "updated_by", "updated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Never: each declared report's row is seeded from its declaration."""
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Never: a deleted row would come back from the declaration at the next read."""
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """Every declared report's row (seeded here if it has none yet)."""
        if self.has_view_or_change_permission(request):
            limits.seed_all()
        return super().changelist_view(request, extra_context)

    def save_model(self, request: HttpRequest, obj: ReportLimits, form: Any, change: bool) -> None:
        """Save the limits with who changed them and when, logged with the reason and each
        value's old and new (``litejobs.reports.operations.change_limits``)."""
        actor = Actor(acted_by(request), request.user.pk, form.cleaned_data["reason"])
        operations.change_limits(obj, actor)

    @admin.display(description="max range")
    def range_shown(self, obj: ReportLimits) -> str:
        """The longest range a request may ask for."""
        return _duration(obj.max_range)

    @admin.display(description="max rows")
    def max_rows_shown(self, obj: ReportLimits) -> str:
        """Rows a run may write."""
        return f"{obj.max_rows:,}"

    @admin.display(description="max seconds")
    def seconds_shown(self, obj: ReportLimits) -> str:
        """How long a run may run."""
        return _duration(obj.max_seconds)

    @admin.display(description="max bytes")
    def bytes_shown(self, obj: ReportLimits) -> str:
        """How large an output may grow."""
        return format_size(obj.max_bytes)

    @admin.display(description="lifetime")
    def lifetime_shown(self, obj: ReportLimits) -> str:
        """How long a finished output is offered."""
        return _duration(obj.lifetime)

    @admin.display(description="as declared")
    def declared(self, obj: ReportLimits) -> str:
        """The declaration's own values (what the row was seeded with)."""
        declaration = reports.get(obj.report)
        if declaration is None:
            return "- (no installed app declares this report any more)"
        stated = declaration.limits.describe()
        stated["request_budget"] = str(declaration.request_budget)
        return ", ".join(f"{name} {value}" for name, value in stated.items())


# Audit records -----------------------------------------------------------------------------


class OutcomeFilter(admin.SimpleListFilter):
    """Filter by outcome: served within the request, a run's state (queued, then how it
    ended), downloaded, or refused."""

    title = "outcome"
    parameter_name = "outcome"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, str]]:
        """The outcomes an audit record holds (no DISTINCT over the table)."""
        states = [str(state) for state in ReportState]
        outcomes = (auditing.SERVED, *states, auditing.DOWNLOADED, auditing.REFUSED)
        return [(o, o) for o in outcomes]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        """Records of the selected outcome."""
        return queryset.filter(outcome=self.value()) if self.value() else queryset


@admin.register(ReportAudit)
class ReportAuditAdmin(ScopedAdmin):
    """Who read which report, why, with which parameters and how many rows, and the code of a
    refused request or a stopped run: newest first, never changed (the table's triggers)."""

    list_display = (
        "at_shown",
        "report",
        "user_shown",
        "tenant",
        "outcome",
        "code",
        "rows_shown",
        "reason",
        "target",
        "run_link",
    )
    list_filter = (ReportFilter, OutcomeFilter)
    paginator = CappedCountPaginator
    show_full_result_count = False
    list_per_page = 50
    ordering = ("-id",)
    actions = None

    class Media:
        css = STYLE

    fields = (
        "id",
        "at",
        "report",
        "user_name",
        "tenant",
        "outcome",
        "code",
        "row_count",
        "reason",
        "target",
        "parameters_shown",
        "run_link",
    )
    readonly_fields = fields

    @admin.display(description="at", ordering="at")
    def at_shown(self, obj: ReportAudit) -> str:
        """When it was read."""
        return format_html('<span class="litejobs-nowrap">{}</span>', _instant(obj.at))

    @admin.display(description="user", ordering="user_name")
    def user_shown(self, obj: ReportAudit) -> str:
        """Who read it."""
        return obj.user_name or "-"

    @admin.display(description="rows", ordering="row_count")
    def rows_shown(self, obj: ReportAudit) -> str:
        """Rows read (none for a request that queued a run)."""
        return "-" if obj.row_count is None else f"{obj.row_count:,}"

    @admin.display(description="parameters")
    def parameters_shown(self, obj: ReportAudit) -> str:
        """The range and filters read."""
        return _parameters(obj.parameters)

    @admin.display(description="run")
    def run_link(self, obj: ReportAudit) -> str:
        """The run read, if the read was one."""
        if obj.run_id is None:
            return "-"
        url = reverse(f"{self.admin_site.name}:litejobs_reportrun_change", args=[obj.run_id])
        return format_html('<a href="{}">#{}</a>', url, obj.run_id)
