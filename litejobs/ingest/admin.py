"""Ingest pipelines in the admin: what each declared pipeline took in, dropped (per reason,
per hour) and errored, how full its buffer is, its overflows, its file imports and their
error reports; the records set aside, replayed by reason after a fix (``adminrecords``);
file imports started (``adminimports``).

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

from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, reverse
from django.utils import timezone

from ..admin import charts
from ..admin.base import ReadOnlyAdmin, admin_page, refused_error
from ..core import clock
from ..core.durations import format_age
from ..exceptions import LitejobsError
from ..models import IngestCount, OverflowEvent
from . import (
    adminimports,  # noqa: F401 - the file imports' admin registers itself
    operations,
)
from .adminrecords import confirm_replay
from .declarations import pipelines
from .errors import PipelineNotFound

OVERVIEW_TEMPLATE = "admin/litejobs/ingest/pipelines.html"
PIPELINE_TEMPLATE = "admin/litejobs/ingest/pipeline.html"
#: The spans the drops chart offers, in hours; the first is the default.
CHART_HOURS = (24, 48)


def _hour_label(hour: datetime) -> str:
    return timezone.localtime(hour).strftime("%d %b %H:00")


def _short_hour(hour: datetime) -> str:
    return timezone.localtime(hour).strftime("%H:00")


@admin.register(IngestCount)
class PipelineAdmin(ReadOnlyAdmin):
    """Every declared pipeline at a glance, and a page per pipeline."""

    actions = None

    def get_urls(self) -> list[URLPattern]:
        """The pipeline pages, beside the overview."""
        return [
            self.page_url("pipeline/<path:name>/", self.pipeline_view, "pipeline"),
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
