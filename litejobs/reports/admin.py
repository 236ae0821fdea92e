"""Reports and exports in the admin: the runs the worker writes (their progress, a Download
button once done, cancel), and beside them a page to request a report (``adminrequests``),
each report's limits as setting rows an operator changes without a deploy (``adminlimits``)
and the audit record of every read (``adminaudit``); each user sees the records of the
reports they may read, for their tenant (``adminscope``).

Cancelling needs the change permission on report runs; it asks why, and goes to the operator
action log (``litejobs.reports.operations``) with who and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.urls import URLPattern
from django.utils.html import format_html

from ..admin.base import ACTION_LIMIT, report
from ..admin.counting import CappedCountPaginator
from ..admin.reasons import ask_reason, ask_reason_on_page, selected_hidden
from ..core import clock
from ..core.enums import REPORT_LIVE, ReportState
from ..core.sizes import format_size
from ..jobs.actionlog import Actor
from ..models import ReportRun
from . import (
    adminaudit,  # noqa: F401 - the audit records' admin registers itself
    adminlimits,  # noqa: F401 - the report limits' admin registers itself
    operations,
    views,
)
from .adminrequests import RequestPages
from .adminscope import STYLE, ReportFilter, ago_or_in, as_pairs, readable, record_link

CANCEL_INTRO = (
    "A queued run never starts; a running one is stopped by its worker at its next page. "
    "Either way what it wrote is removed and nothing is offered. Your reason goes to the "
    "operator action log with your name."
)


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
class ReportRunAdmin(RequestPages):
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
        return ago_or_in(obj.created_at)

    @admin.display(description="expires", ordering="expires_at")
    def expires_shown(self, obj: ReportRun) -> str:
        """When its output is removed (the instant on hover)."""
        return ago_or_in(obj.expires_at)

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
        return as_pairs(obj.parameters)

    @admin.display(description="job")
    def job_link(self, obj: ReportRun) -> str:
        """The worker's job that runs it."""
        return record_link(self, "job", obj.job_id, f"job {obj.job_id}")

    # Pages ---------------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        """A run's cancel button and the download of signed links (for projects whose URLconf
        does not include ``litejobs.urls``), then the request page's and the model's own."""
        return [
            self.page_url("download/<str:token>/", self.download_view, "download"),
            self.page_url("<path:object_id>/cancel/", self.cancel_view, "cancel"),
            *super().get_urls(),
        ]

    def change_context(self, request: HttpRequest, object_id: str) -> dict[str, Any]:
        """The run's page: its Download and Cancel buttons; reloaded while it runs."""
        run = self.get_object(request, object_id)
        return {
            "download_url": (
                run.download_url() if offered(run, readable(request), clock.now()) else ""
            ),
            "can_cancel": run.state in REPORT_LIVE and self.has_operate_permission(request),
            "live": run.state in REPORT_LIVE,
        }

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
