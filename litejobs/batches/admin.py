"""Batches in the admin (its ``Feature.admin``): read-only, each with its progress, its counts
as its callback sees them, its children by their state now (linked to the job listing) and its
callbacks' jobs."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from ..admin.base import ReadOnlyAdmin
from ..models import Batch
from .showing import batch_details


@admin.register(Batch)
class BatchAdmin(ReadOnlyAdmin):
    """Batches of jobs with one callback: written by ``litejobs.batch`` and the job table's
    triggers, never by hand."""

    list_display = ("id", "label", "state", "progress", "on_complete", "created_at")
    list_filter = ("state",)
    actions = None
    list_per_page = 50
    fields = (
        "id",
        "label",
        "state",
        "progress",
        "counts",
        "children",
        "retried_after",
        "callbacks",
        "created_at",
        "failed_at",
        "completed_at",
    )
    readonly_fields = fields

    @admin.display(description="progress")
    def progress(self, obj: Batch) -> str:
        """Children ended of the total."""
        return f"{obj.total - obj.pending} of {obj.total} ended"

    @admin.display(description="counts (as the callback gets them)")
    def counts(self, obj: Batch) -> str:
        """done, dead and cancelled."""
        return f"{obj.done} done, {obj.dead} dead, {obj.cancelled} cancelled"

    @admin.display(description="children by state now")
    def children(self, obj: Batch) -> str:
        """Each state with its count (a child retried after the callback shows here)."""
        details = batch_details(obj)["children_by_state"]
        return ", ".join(f"{count} {state}" for state, count in sorted(details.items())) or "none"

    @admin.display(description="callbacks")
    def callbacks(self, obj: Batch) -> str:
        """The callback jobs, linked to their pages, with their states."""
        details = batch_details(obj)
        shown: list[tuple[Any, ...]] = []
        for role in ("on_complete", "on_failure"):
            callback = details[role]
            if callback:
                url = reverse(
                    f"{self.admin_site.name}:litejobs_job_change", args=[callback["job_id"]]
                )
                shown.append((role, url, callback["job"], callback["job_id"], callback["state"]))
        if not shown:
            return format_html("{}", "none")
        return format_html_join(mark_safe("<br>"), '{}: <a href="{}">{} #{}</a> ({})', shown)
