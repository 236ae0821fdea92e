"""Jobs in the admin: a listing that stays fast at a million rows (``joblisting``), each job
with why it waits, and a redacted detail page with its steps and failed attempts. Its columns
are ``jobcolumns``'; its actions and buttons ``jobactions``' (the operator verbs of
``litejobs.jobs.operations``); acting on every job a filter matches ``jobbulk``'s."""

from __future__ import annotations

from typing import Any, cast

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Left
from django.http import HttpRequest
from django.utils.html import format_html

from ..core.enums import TERMINAL
from ..jobs import holdups
from ..models import Job, JobAttempt, JobStep, StepState
from .base import RecordInline
from .counting import CappedCountPaginator as CappedCountPaginator
from .jobactions import JobActions
from .jobbulk import BulkOverFilterAdmin
from .jobcolumns import ERROR_SHOWN, HOLDUP_ATTR, JobColumns
from .jobfilters import (
    CreatedFilter,
    FinishedFilter,
    IdsFilter,
    InputFilter,
    KeyFilter,
    NameFilter,
    QueueFilter,
    StateFilter,
    TenantFilter,
)
from .joblisting import KeysetChangeList
from .payloadfilter import PayloadFilter


class JobChangeList(KeysetChangeList):
    """The job listing's page, each job with why it waits (a few statements for the page)."""

    def get_results(self, request: HttpRequest) -> None:
        """The page's jobs, and the reason each one waits."""
        super().get_results(request)
        self.result_list = list(self.result_list)
        reasons = holdups.holdups_of(self.result_list)
        for job in self.result_list:
            setattr(job, HOLDUP_ATTR, reasons.get(job.pk))

    def filter_summary(self) -> list[str]:
        """The filters and search in force, as people read them (``state: Dead``), for the
        page that says nothing matched."""
        chosen = []
        for spec in self.filter_specs:
            if not getattr(spec, "used_parameters", None):
                continue
            if isinstance(spec, InputFilter):
                shown = [spec.summary()]
            else:
                shown = [str(c["display"]) for c in spec.choices(self) if c.get("selected")]
            chosen.append(f"{spec.title}: {', '.join(shown)}")
        if self.query:
            chosen.append(f"search: {self.query}")
        return chosen


class JobRecordInline(RecordInline):
    """A read-only record kept under a job (its attempts, its steps), shown on its page."""

    parent_view_permission = "litejobs.view_job"


class JobStepInline(JobRecordInline):
    """The job's durable steps as a timeline: state, executions, stored output, error."""

    model = JobStep
    verbose_name = "step"
    verbose_name_plural = "steps (timeline)"
    empty_text = "No steps."
    fields = (
        "name",
        "kind",
        "state_shown",
        "executions",
        "created_at",
        "finished_at",
        "wake_at",
        "event",
        "output",
        "error",
    )
    readonly_fields = fields
    ordering = ("created_at", "id")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """Each step with its job's state (one join), which says whether it runs again."""
        steps = super().get_queryset(request).annotate(job_state=F("job__state"))
        return cast(QuerySet[Any], steps)

    @admin.display(description="state")
    def state_shown(self, obj: JobStep) -> str:
        """The step's state; a failed step of a finished job runs no more, so it says why."""
        job_state = getattr(obj, "job_state", None)
        if obj.state == StepState.FAILED and job_state in TERMINAL:
            return f"Failed (the job is {job_state}: no next attempt)"
        return obj.get_state_display()


class JobAttemptInline(JobRecordInline):
    """The attempts that did not succeed, oldest first: why, when and on which worker."""

    model = JobAttempt
    verbose_name = "failed attempt"
    verbose_name_plural = "failed attempts"
    empty_text = "No failed attempts."
    fields = (
        "number",
        "outcome",
        "worker",
        "started_at",
        "finished_at",
        "error_class",
        "error_message",
        "traceback",
    )
    readonly_fields = fields
    ordering = ("number",)

    @admin.display(description="traceback")
    def traceback(self, obj: JobAttempt) -> str:
        """The attempt's (scrubbed) traceback, folded: tracebacks are long."""
        if not obj.error_traceback:
            return "-"
        return format_html(
            '<details><summary>show</summary><pre style="white-space: pre-wrap">{}</pre></details>',
            obj.error_traceback,
        )


#: Columns the listing never shows: not read for a changelist page.
HEAVY_FIELDS = ("payload", "result", "error_message", "error_traceback", "progress")


@admin.register(Job)
class JobAdmin(JobActions, JobColumns, BulkOverFilterAdmin):
    """Every job, newest first; operators act with retry, cancel, run now and delete, on the
    selected jobs or (the bulk page) on every job the current filter matches."""

    list_display = (
        "id",
        "name_shown",
        "queue",
        "state_label",
        "waiting_because",
        "error_summary",
        "attempts_label",
        "run_at_shown",
        "created_shown",
        "finished_shown",
    )
    list_display_links = ("id", "name_shown")
    list_filter = (
        StateFilter,
        QueueFilter,
        NameFilter,
        TenantFilter,
        KeyFilter,
        CreatedFilter,
        FinishedFilter,
        PayloadFilter,
        IdsFilter,
    )
    search_fields = ("key", "name", "id")
    search_help_text = "An exact job id, idempotency key or job name."
    list_per_page = 50
    list_max_show_all = 50
    sortable_by = ()
    show_facets = admin.ShowFacets.NEVER
    show_full_result_count = False
    paginator = CappedCountPaginator
    ordering = ("-id",)
    actions = ("retry_jobs", "cancel_jobs", "promote_jobs", "delete_jobs")
    inlines = (JobStepInline, JobAttemptInline)
    fieldsets = (
        (
            None,
            {
                "fields": (
                    ("id", "name", "module"),
                    ("queue", "state_label", "tenant"),
                    ("key", "priority", "attempts_label"),
                    ("run_at_shown", "created_shown", "started_shown", "finished_shown"),
                    "created_by",
                )
            },
        ),
        (
            "Payload and result",
            {
                "fields": ("safe_payload", "version", "result_shown", "progress_shown"),
                "classes": ("collapse",),
            },
        ),
        (
            "Error",
            {
                "classes": ("collapse",),
                "fields": (
                    "error_class_shown",
                    "error_message_shown",
                    "handed_back_at",
                    "traceback_shown",
                ),
            },
        ),
        (
            "Lease",
            {
                "classes": ("collapse",),
                "fields": (
                    "lease_owner",
                    "lease_expires_shown",
                    "fence",
                    "cancel_requested_shown",
                    "concurrency_key",
                    "concurrency_limit",
                    "traceparent",
                ),
            },
        ),
    )
    readonly_fields = tuple(
        name
        for _, options in fieldsets
        for line in options["fields"]
        for name in ((line,) if isinstance(line, str) else line)
    )

    class Media:
        css = {"all": ("litejobs/jobs.css",)}

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        """Keyset pages newest first, with estimated or capped counts."""
        return JobChangeList

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """The listing leaves payloads and tracebacks unread: it shows neither."""
        queryset = super().get_queryset(request)
        match = getattr(request, "resolver_match", None)
        if match is not None and match.url_name == "litejobs_job_changelist":
            queryset = queryset.defer(*HEAVY_FIELDS).annotate(
                error_head=Left("error_message", ERROR_SHOWN * 2)
            )
        return queryset

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """Exact matches only: ``icontains`` over a million keys would scan the table."""
        term = search_term.strip()
        if not term:
            return queryset, False
        match = Q(key=term) | Q(name=term)
        if term.isdigit() and int(term) < 2**63:
            match |= Q(pk=int(term))
        return queryset.filter(match), False
