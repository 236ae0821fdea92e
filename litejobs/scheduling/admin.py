"""Schedules and occurrences in the admin: inspect, replay and disable / enable.

Each schedule's page shows its declaration, its next five run times, its last success, whether
it is overdue, the scheduler leader, and the runbook commands (``admincolumns``); its
actions (disable with a reason, enable) and the occurrences' replay action (with a reason) call
``litejobs.scheduling.operations`` — the functions ``manage.py litejobs`` calls
(``adminactions``).
"""

from __future__ import annotations

from typing import cast
from urllib.parse import urlencode

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from ..admin.base import RecordInline
from ..admin.counting import CappedCountPaginator
from ..models import Job, Occurrence, OccurrenceReplay, Schedule
from .adminactions import OccurrenceReplays, ScheduleSwitches
from .admincolumns import ScheduleColumns


@admin.register(Schedule)
class ScheduleAdmin(ScheduleSwitches, ScheduleColumns):
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
class OccurrenceAdmin(OccurrenceReplays):
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
