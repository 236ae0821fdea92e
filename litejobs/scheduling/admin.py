"""Schedules and occurrences in the admin: inspect, replay and disable / enable.

Each schedule's page shows its declaration, its next five run times, its last success, whether
it is overdue, the scheduler leader, and the runbook commands; its actions (disable with a
reason, enable) and the occurrences' replay action (with a reason) call
``litejobs.scheduling.operations`` — the functions ``manage.py litejobs`` calls.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast
from urllib.parse import urlencode

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from ..admin.base import (
    ACTION_LIMIT,
    ReadOnlyAdmin,
    RecordInline,
    duration_display,
    once_per,
    report,
)
from ..admin.jobs import CappedCountPaginator
from ..admin.reasons import ask_reason, ask_reason_on_page, selected_hidden
from ..conf import settings
from ..core import clock, times
from ..core.retry import Retry
from ..models import Job, Occurrence, OccurrenceReplay, Schedule
from . import health, operations


def _health(row: Schedule) -> health.Health:
    """The schedule's health, computed once per row and request."""
    return once_per(row, "_litejobs_health", lambda: health.health(row, clock.now()))


#: The schedule's durations, each shown as people write it (``2s``, ``90d``).
_DURATIONS = ("jitter", "timeout", "grace", "retention")


@admin.register(Schedule)
class ScheduleAdmin(ReadOnlyAdmin):
    """Every schedule with its switch, next run, last success and overdue flag."""

    list_display = (
        "name",
        "timetable",
        "switch",
        "next_run",
        "last_success_at",
        "overdue_flag",
        "occurrences_link",
    )
    list_filter = ("enabled", "status", "declared")
    search_fields = ("name", "job_name")
    list_per_page = 100
    ordering = ("name",)
    actions = ("disable_schedules", "enable_schedules")
    change_form_template = "admin/litejobs/schedule/change_form.html"
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "name",
                    "job_name",
                    "args",
                    "timetable",
                    "local_time_reason",
                    "status",
                    "decider",
                    "decide_by",
                    "operating_owner",
                    "record_owner",
                )
            },
        ),
        (
            "Behaviour",
            {
                "fields": (
                    "jitter_shown",
                    "overlap",
                    "misfire",
                    "max_catchup",
                    "retry_policy",
                    "timeout_shown",
                    "idempotency",
                    "grace_shown",
                    "retention_shown",
                )
            },
        ),
        (
            "State",
            {
                "fields": (
                    "switch",
                    "state_reason",
                    "state_changed_by",
                    "state_changed_at",
                    "declared",
                    "synced_at",
                    "active_since",
                    "planned_through",
                    "next_runs",
                    "last_success_at",
                    "last_success_for",
                    "overdue_flag",
                    "leader",
                )
            },
        ),
        ("Runbook", {"fields": ("runbook",)}),
    )
    readonly_fields = cast(
        tuple[str, ...], tuple(f for _, options in fieldsets for f in options["fields"])
    )

    # Columns -------------------------------------------------------------------------------

    jitter_shown = duration_display(Schedule, "jitter")
    timeout_shown = duration_display(Schedule, "timeout")
    grace_shown = duration_display(Schedule, "grace")
    retention_shown = duration_display(Schedule, "retention")

    @admin.display(description="retry")
    def retry_policy(self, obj: Schedule) -> str:
        """The retry policy in words: "5 attempts, exponential backoff from 2s to 10m"."""
        return Retry.coerce(obj.retry).describe()

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        """The help texts of the fields shown in words (``retry_policy``, ``*_shown``)."""
        shown = {"retry_policy": "retry", **{f"{n}_shown": n for n in _DURATIONS}}
        kwargs["help_texts"] = {
            column: getattr(Schedule._meta.get_field(field), "help_text", "")
            for column, field in shown.items()
        }
        return super().get_form(request, obj, change, **kwargs)

    @admin.display(description="timetable")
    def timetable(self, obj: Schedule) -> str:
        """The cron or interval, with the zone and its DST behaviour."""
        return operations.describe_timetable(obj)

    @admin.display(description="switch")
    def switch(self, obj: Schedule) -> str:
        """``active``, ``draft``, ``retired``, or ``disabled`` (by whom)."""
        if not obj.enabled:
            return f"disabled by {obj.state_changed_by or '?'}"
        return obj.status

    @admin.display(description="next runs")
    def next_run(self, obj: Schedule) -> str:
        """The next five instants it fires (none while disabled, draft or retired)."""
        runs = _health(obj).next_runs
        if not runs:
            return "-"
        return format_html_join(mark_safe("<br>"), "{}", ((times.when(t),) for t in runs))

    @admin.display(description="next five runs")
    def next_runs(self, obj: Schedule) -> str:
        """The next five instants, in the site's time zone and in the schedule's own."""
        runs = _health(obj).next_runs
        if not runs:
            return "- (not planned: disabled, draft, retired or not declared)"
        zone = health.timetable_of(obj).tzinfo
        return format_html(
            "<ol>{}</ol>",
            format_html_join(
                "",
                "<li>{} ({})</li>",
                ((times.when(t), times.when(t, zone=zone)) for t in runs),
            ),
        )

    @admin.display(description="overdue")
    def overdue_flag(self, obj: Schedule) -> str:
        """OVERDUE (red) when no occurrence completed within its period plus grace."""
        state = _health(obj)
        if not state.overdue:
            return "no"
        return format_html(
            '<strong class="litejobs-alert">OVERDUE</strong> (no success since {})',
            times.when(cast(datetime, state.expected)),  # overdue: an instant was expected
        )

    @admin.display(description="occurrences")
    def occurrences_link(self, obj: Schedule) -> str:
        """A link to its occurrences."""
        url = reverse(f"{self.admin_site.name}:litejobs_occurrence_changelist")
        return format_html(
            '<a href="{}?{}">occurrences</a>', url, urlencode({"schedule__id__exact": obj.pk})
        )

    @admin.display(description="idempotency")
    def idempotency(self, obj: Schedule) -> str:
        """Always the occurrence identity."""
        return f"occurrence:{obj.name}:<scheduled instant, UTC>"

    @admin.display(description="scheduler leader")
    def leader(self, obj: Schedule) -> str:
        """The replica that plans right now (the leader lease)."""
        lease = health.leader()
        if lease is None:
            return "none yet: start manage.py runscheduler"
        lapsed = lease.expires_at < clock.database_now(settings.DATABASE)
        return f"{lease.host} pid {lease.pid}, lease until {times.when(lease.expires_at)}" + (
            " (LAPSED: no scheduler is running)" if lapsed else ""
        )

    @admin.display(description="runbook")
    def runbook(self, obj: Schedule) -> str:
        """The commands that inspect, replay, disable and enable it (also the page's buttons)."""
        return format_html(
            "<table>{}</table><p>Disabling stops new occurrences; an occurrence already claimed "
            "by a worker finishes. A replay is a new attempt of the same occurrence, recorded "
            "with who, when and why.</p>",
            format_html_join(
                "",
                "<tr><th>{}</th><td><code>{}</code></td></tr>",
                operations.runbook(obj.name),
            ),
        )

    # Actions -------------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        """Per-schedule disable and enable pages (the buttons on the schedule's page)."""
        info = self.opts.app_label, self.opts.model_name
        view = self.admin_site.admin_view
        return [
            path(
                "<path:object_id>/disable/",
                view(self.disable_view),
                name="{}_{}_disable".format(*info),
            ),
            path(
                "<path:object_id>/enable/",
                view(self.enable_view),
                name="{}_{}_enable".format(*info),
            ),
            *super().get_urls(),
        ]

    def _disable(self, request: HttpRequest, rows: list[Schedule], reason: str) -> None:
        def disable(name: str, by: str) -> operations.SwitchOutcome:
            return operations.disable(name, reason=reason, by=by, user_id=request.user.pk)

        report(self, request, disable, [row.name for row in rows])

    def _enable(self, request: HttpRequest, rows: list[Schedule]) -> None:
        def enable(name: str, by: str) -> operations.SwitchOutcome:
            return operations.enable(name, by=by, user_id=request.user.pk)

        report(self, request, enable, [row.name for row in rows])

    @admin.action(description="Disable selected schedules (asks why)", permissions=["operate"])
    def disable_schedules(
        self, request: HttpRequest, queryset: QuerySet[Any]
    ) -> HttpResponse | None:
        """Ask for a reason, then ``operations.disable`` each selected schedule."""
        rows = list(queryset[:ACTION_LIMIT])
        return ask_reason(
            self,
            request,
            rows,
            title="Disable schedules",
            intro="No new occurrence is planned until they are enabled again; an occurrence "
            "already claimed by a worker finishes.",
            hidden=selected_hidden("disable_schedules", rows),
            apply=lambda reason: self._disable(request, rows, reason),
        )

    @admin.action(description="Enable selected schedules", permissions=["operate"])
    def enable_schedules(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """``operations.enable`` each selected schedule (planning resumes from now)."""
        self._enable(request, list(queryset[:ACTION_LIMIT]))

    def disable_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The schedule page's "Disable" button: the reason form, then the disable."""
        if not self.has_operate_permission(request):
            raise PermissionDenied
        row = get_object_or_404(Schedule, pk=object_id)
        return ask_reason_on_page(
            self,
            request,
            row,
            title=f"Disable schedule {row.name}",
            intro="No new occurrence is planned until it is enabled again; an occurrence "
            "already claimed by a worker finishes.",
            apply=lambda reason: self._disable(request, [row], reason),
        )

    def enable_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The schedule page's "Enable" button (POST only: it changes the switch)."""
        if not self.has_operate_permission(request):
            raise PermissionDenied
        row = get_object_or_404(Schedule, pk=object_id)
        if request.method == "POST":
            self._enable(request, [row])
        return HttpResponseRedirect(
            reverse(f"{self.admin_site.name}:litejobs_schedule_change", args=[row.pk])
        )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The schedule's page, with its runbook buttons."""
        extra = {"can_operate": self.has_operate_permission(request), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra)


class ReplayInline(RecordInline):
    """The replay audit of an occurrence: who, when, why, and the job each replay started."""

    model = OccurrenceReplay
    verbose_name = "manual replay"
    verbose_name_plural = "manual replays (audit)"
    empty_text = "No manual replays."
    parent_view_permission = "litejobs.view_occurrence"
    fields = ("requested_at", "requested_by", "reason", "previous_state", "job_id")
    readonly_fields = fields
    ordering = ("requested_at",)


@admin.register(Occurrence)
class OccurrenceAdmin(ReadOnlyAdmin):
    """Every occurrence, latest instant first, with its state and times; replay by action."""

    list_display = (
        "id",
        "schedule",
        "scheduled_for",
        "state",
        "attempts",
        "replays",
        "run_at",
        "started_at",
        "completed_at",
        "lease_owner",
        "fence",
    )
    list_filter = ("state", "schedule")
    list_select_related = ("schedule",)
    list_per_page = 50
    show_full_result_count = False
    paginator = CappedCountPaginator
    ordering = ("-scheduled_for",)
    actions = ("replay_occurrences",)
    inlines = (ReplayInline,)
    change_form_template = "admin/litejobs/occurrence/change_form.html"
    fieldsets = (
        (None, {"fields": ("schedule", "scheduled_for", "run_at", "state", "tenant", "note")}),
        (
            "Times",
            {
                "fields": (
                    "created_at",
                    "last_scheduled_at",
                    "started_at",
                    "completed_at",
                    "finished_at",
                )
            },
        ),
        (
            "Attempts and lease",
            {
                "fields": (
                    "attempts",
                    "replays",
                    "jobs",
                    "lease_owner",
                    "lease_expires_at",
                    "fence",
                )
            },
        ),
        ("Error", {"fields": ("error_class", "error_message")}),
    )
    readonly_fields = cast(
        tuple[str, ...], tuple(f for _, options in fieldsets for f in options["fields"])
    )

    @admin.display(description="jobs")
    def jobs(self, obj: Occurrence) -> str:
        """Its jobs (the planned run and each replay), all holding the occurrence identity."""
        url = reverse(f"{self.admin_site.name}:litejobs_job_changelist")
        ids = list(
            Job.objects.filter(occurrence_id=obj.pk).order_by("pk").values_list("pk", flat=True)
        )
        if not ids:
            return "- (purged by the jobs' retention, or never enqueued: skipped)"
        key = ""
        if obj.last_job_id:
            key = Job.objects.filter(pk=obj.last_job_id).values_list("key", flat=True).first() or ""
        return format_html(
            '{} (<a href="{}?{}">list</a>)',
            ", ".join(f"#{i}" for i in ids),
            url,
            urlencode({"q": key}),
        )

    def get_urls(self) -> list[URLPattern]:
        """A per-occurrence replay page (the button on the occurrence's page)."""
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "<path:object_id>/replay/",
                self.admin_site.admin_view(self.replay_view),
                name="{}_{}_replay".format(*info),
            ),
            *super().get_urls(),
        ]

    def _replay(self, request: HttpRequest, occurrences: list[Occurrence], reason: str) -> None:
        def replay(occurrence_id: int, by: str) -> operations.ReplayOutcome:
            return operations.replay(occurrence_id, reason=reason, by=by, user_id=request.user.pk)

        report(self, request, replay, [occurrence.pk for occurrence in occurrences])

    @admin.action(description="Replay selected occurrences (asks why)", permissions=["operate"])
    def replay_occurrences(
        self, request: HttpRequest, queryset: QuerySet[Any]
    ) -> HttpResponse | None:
        """Ask for a reason, then ``operations.replay`` each selected occurrence."""
        rows = list(queryset.select_related("schedule")[:ACTION_LIMIT])
        return ask_reason(
            self,
            request,
            rows,
            title="Replay occurrences",
            intro="Each runs again as a new attempt under its own identity (same schedule and "
            "instant), recorded with your name, the time and this reason.",
            hidden=selected_hidden("replay_occurrences", rows),
            apply=lambda reason: self._replay(request, rows, reason),
        )

    def replay_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The occurrence page's "Replay" button: the reason form, then the replay."""
        if not self.has_operate_permission(request):
            raise PermissionDenied
        occurrence = get_object_or_404(Occurrence.objects.select_related("schedule"), pk=object_id)
        return ask_reason_on_page(
            self,
            request,
            occurrence,
            title=f"Replay occurrence {occurrence.pk}",
            intro="It runs again as a new attempt under its own identity (same schedule and "
            "instant), recorded with your name, the time and this reason.",
            apply=lambda reason: self._replay(request, [occurrence], reason),
        )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The occurrence's page, with its replay button."""
        extra = {"can_operate": self.has_operate_permission(request), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra)
