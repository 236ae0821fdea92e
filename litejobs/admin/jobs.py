"""Jobs in the admin: a listing that stays fast at a million rows, a redacted detail page,
and the retry / cancel / run now actions of ``litejobs.jobs.operations``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db.models import F, Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from ..core import clock
from ..core.enums import TERMINAL
from ..jobs import operations
from ..jobs.operations import ActionResult
from ..models import Job, JobAttempt, JobState, JobStep, Occurrence, StepState
from .base import ACTION_LIMIT, ReadOnlyAdmin, RecordInline, report
from .joblisting import CappedCountPaginator as CappedCountPaginator
from .joblisting import (
    CreatedFilter,
    FinishedFilter,
    KeyFilter,
    KeysetChangeList,
    NameFilter,
    PayloadFilter,
    QueueFilter,
    TenantFilter,
)


def _job_level(outcome: ActionResult) -> int:
    """A cancel that only asked a running job to stop is a warning: it has not stopped yet."""
    return messages.WARNING if outcome.action == "cancel-requested" else messages.SUCCESS


def _pre(value: Any) -> str:
    if value in (None, "", {}, []):
        return "-"
    text = value if isinstance(value, str) else json.dumps(value, indent=2, sort_keys=True)
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', text)


def _current_error(job: Job, value: str) -> str:
    """A done job has no current error: what an earlier attempt raised is left on its row,
    and shown under that attempt instead."""
    return "" if job.state == JobState.DONE else value


class JobRecordInline(RecordInline):
    """A read-only record kept under a job (its attempts, its steps), shown on its page."""

    parent_view_permission = "litejobs.view_job"


class JobStepInline(JobRecordInline):
    """The job's durable steps as a timeline: state, executions, stored output, error."""

    model = JobStep
    verbose_name = "step"
    verbose_name_plural = "steps (timeline)"
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
class JobAdmin(ReadOnlyAdmin):
    """Every job, newest first; operators act with retry, cancel and run now."""

    list_display = (
        "id",
        "name",
        "queue",
        "state_label",
        "attempts_label",
        "run_at",
        "created_at",
        "finished_at",
    )
    list_display_links = ("id", "name")
    list_filter = (
        "state",
        QueueFilter,
        NameFilter,
        TenantFilter,
        KeyFilter,
        CreatedFilter,
        FinishedFilter,
        PayloadFilter,
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
    actions = ("retry_jobs", "cancel_jobs", "promote_jobs")
    inlines = (JobStepInline, JobAttemptInline)
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "id",
                    "name",
                    "module",
                    "queue",
                    "state_label",
                    "tenant",
                    "key",
                    "priority",
                    "attempts_label",
                    "run_at",
                    "created_at",
                    "started_at",
                    "finished_at",
                )
            },
        ),
        (
            "Payload and result",
            {"fields": ("safe_payload", "version", "result_shown", "progress_shown")},
        ),
        (
            "Error",
            {
                "fields": (
                    "error_class_shown",
                    "error_message_shown",
                    "handed_back_at",
                    "traceback_shown",
                )
            },
        ),
        (
            "Lease",
            {
                "fields": (
                    "lease_owner",
                    "lease_expires_at",
                    "fence",
                    "cancel_requested",
                    "concurrency_key",
                    "concurrency_limit",
                    "traceparent",
                    "occurrence_link",
                )
            },
        ),
    )
    readonly_fields = cast(
        tuple[str, ...], tuple(f for _, options in fieldsets for f in options["fields"])
    )

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        """Keyset pages newest first, with estimated or capped counts."""
        return KeysetChangeList

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """The listing leaves payloads and tracebacks unread: it shows neither."""
        queryset = super().get_queryset(request)
        match = getattr(request, "resolver_match", None)
        if match is not None and match.url_name == "litejobs_job_changelist":
            queryset = queryset.defer(*HEAVY_FIELDS)
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

    # Columns -------------------------------------------------------------------------------

    @admin.display(description="state", ordering="state")
    def state_label(self, obj: Job) -> str:
        """The state, marking scheduled and failed jobs whose time has come as due."""
        return operations.state_label(obj.state, obj.run_at, clock.now())

    @admin.display(description="attempts")
    def attempts_label(self, obj: Job) -> str:
        """Attempts started out of the maximum, e.g. ``2/5``."""
        return f"{obj.attempts}/{obj.max_attempts}"

    @admin.display(description="payload")
    def safe_payload(self, obj: Job) -> str:
        """The payload with the declaration's sensitive fields redacted (all, if unknown)."""
        return _pre(operations.safe_payload(obj.name, obj.payload))

    @admin.display(description="result")
    def result_shown(self, obj: Job) -> str:
        """The body's JSON result, indented."""
        return _pre(obj.result)

    @admin.display(description="progress")
    def progress_shown(self, obj: Job) -> str:
        """The latest ``ctx.progress(...)`` the body reported."""
        return _pre(obj.progress)

    @admin.display(description="occurrence")
    def occurrence_link(self, obj: Job) -> str:
        """The scheduled occurrence this job runs, if any (purged ones by id only)."""
        if obj.occurrence_id is None:
            return "-"
        if not Occurrence.objects.filter(pk=obj.occurrence_id).exists():
            return f"{obj.occurrence_id} (purged by its schedule's retention)"
        url = reverse(
            f"{self.admin_site.name}:litejobs_occurrence_change", args=[obj.occurrence_id]
        )
        return format_html('<a href="{}">occurrence {}</a>', url, obj.occurrence_id)

    @admin.display(description="error class")
    def error_class_shown(self, obj: Job) -> str:
        """The current error's class."""
        return _current_error(obj, obj.error_class) or "-"

    @admin.display(description="error message")
    def error_message_shown(self, obj: Job) -> str:
        """The current error's message."""
        return _current_error(obj, obj.error_message) or "-"

    @admin.display(description="traceback")
    def traceback_shown(self, obj: Job) -> str:
        """The current error's traceback (sensitive values already scrubbed by the worker)."""
        return _pre(_current_error(obj, obj.error_traceback))

    # Actions -------------------------------------------------------------------------------

    def _act(self, request: HttpRequest, queryset: QuerySet[Any], verb: Callable[..., Any]) -> None:
        ids = list(queryset.order_by("-pk").values_list("pk", flat=True)[: ACTION_LIMIT + 1])
        if len(ids) > ACTION_LIMIT:
            self.message_user(
                request,
                f"[selection-too-large] An action applies to at most {ACTION_LIMIT} jobs at "
                "once; nothing was changed. Narrow the list with the filters, or use "
                "`manage.py litejobs` in a loop.",
                messages.ERROR,
            )
            return
        report(self, request, verb, ids, level=_job_level)

    @admin.action(
        description="Retry selected jobs (ready now, attempts reset)", permissions=["operate"]
    )
    def retry_jobs(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """``operations.retry`` on each selected job."""
        self._act(request, queryset, operations.retry)

    @admin.action(description="Cancel selected jobs", permissions=["operate"])
    def cancel_jobs(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """``operations.cancel`` on each selected job (running ones: requested)."""
        self._act(request, queryset, operations.cancel)

    @admin.action(description="Run selected jobs now", permissions=["operate"])
    def promote_jobs(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """``operations.promote`` on each selected job."""
        self._act(request, queryset, operations.promote)
