"""The audit record of every report read in the admin: who read which report, why, with which
parameters and how many rows, and the code of a refused request or a stopped run; each user
sees the records of their own reports and tenant (``adminscope``)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from ..admin.counting import CappedCountPaginator
from ..core import times
from ..core.enums import ReportState
from ..models import ReportAudit
from . import auditing
from .adminscope import STYLE, ReportFilter, ScopedAdmin, as_pairs, record_link


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
        return format_html('<span class="litejobs-nowrap">{}</span>', times.when(obj.at))

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
        return as_pairs(obj.parameters)

    @admin.display(description="run")
    def run_link(self, obj: ReportAudit) -> str:
        """The run read, if the read was one."""
        return record_link(self, "reportrun", obj.run_id, f"#{obj.run_id}")
