"""Jobs in the admin: a listing that stays fast at a million rows, a redacted detail page,
and the retry / cancel / run now / delete actions of ``litejobs.jobs.operations`` (each
written to the operator action log with the admin user)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import F, Model, Q, QuerySet
from django.db.models.functions import Left
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import NoReverseMatch, URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from ..core import clock
from ..core.enums import LIVE, TERMINAL
from ..jobs import holdups, operations, origins, showing
from ..jobs.operations import PROMOTABLE, RETRYABLE, ActionResult
from ..models import (
    BulkAction,
    Job,
    JobAttempt,
    JobState,
    JobStep,
    Occurrence,
    OutboxMessage,
    StepState,
)
from .base import (
    ACTION_LIMIT,
    ReadOnlyAdmin,
    RecordInline,
    field_display,
    report,
    time_display,
)
from .counting import CappedCountPaginator as CappedCountPaginator
from .jobbulk import BulkOverFilterAdmin
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

#: The attribute the listing puts each job's ``HoldUp`` under (computed for the page).
HOLDUP_ATTR = "_litejobs_holdup"
#: Characters of the error's first line the listing shows (the job's page shows it whole).
ERROR_SHOWN = 80


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


def _job_level(outcome: ActionResult) -> int:
    """A cancel that only asked a running job to stop is a warning: it has not stopped yet."""
    return messages.WARNING if outcome.action == "cancel-requested" else messages.SUCCESS


def _breakable(name: str) -> list[str]:
    """``orders.send_receipt`` -> ``["orders.", "send_", "receipt"]``: where a name may
    break onto the next line."""
    return re.findall(r"[^._]*[._]|[^._]+$", name)


def _pre(value: Any) -> str:
    if value in (None, "", {}, []):
        return "-"
    text = value if isinstance(value, str) else json.dumps(value, indent=2, sort_keys=True)
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', text)


def _current_error(job: Job, value: str) -> str:
    """A done job has no current error: what an earlier attempt raised is left on its row,
    and shown under that attempt instead."""
    return "" if job.state == JobState.DONE else value


def error_line(job: Job, message: str, *, limit: int | None = None) -> str:
    """The current error in one line: its class (without its module) and the first line of
    its message, cut to ``limit`` characters; empty when the job has no current error."""
    error_class = _current_error(job, job.error_class)
    if not error_class:
        return ""
    lines = message.strip().splitlines()
    text = f"{error_class.rsplit('.', 1)[-1]}: {lines[0]}" if lines else error_class
    if limit is not None and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def state_badge(job: Job) -> str:
    """The state as a coloured badge (``jobs.css``: readable in light and dark mode), due
    scheduled and failed jobs marked as due."""
    label = showing.state_label(job.state, job.run_at, clock.now())
    return format_html('<span class="litejobs-state litejobs-state-{}">{}</span>', job.state, label)


#: What created a job -> its record, and what purges it (none: it is never deleted).
ORIGIN_RECORDS: dict[origins.OriginKind, tuple[type[Model], str | None]] = {
    origins.OriginKind.OCCURRENCE: (Occurrence, "its schedule's retention"),
    origins.OriginKind.OUTBOX_MESSAGE: (OutboxMessage, "the outbox retention"),
    origins.OriginKind.BULK_ACTION: (BulkAction, None),
}

#: The job page's buttons: verb -> (label, the states it applies to, the operator verb). The
#: verbs are those of the listing's actions and of ``manage.py litejobs``.
JOB_BUTTONS: dict[str, tuple[str, tuple[str, ...], Callable[..., ActionResult]]] = {
    "retry": ("Retry", RETRYABLE, operations.retry),
    "promote": ("Run now", PROMOTABLE, operations.promote),
    "cancel": ("Cancel", LIVE, operations.cancel),
}


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
class JobAdmin(BulkOverFilterAdmin, ReadOnlyAdmin):
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

    # Columns -------------------------------------------------------------------------------

    run_at_shown = time_display(Job, "run_at")
    created_shown = time_display(Job, "created_at")
    started_shown = time_display(Job, "started_at")
    finished_shown = time_display(Job, "finished_at")
    lease_expires_shown = time_display(Job, "lease_expires_at")
    cancel_requested_shown = field_display(
        Job, "cancel_requested", lambda asked: "yes" if asked else "no"
    )

    @admin.display(description="name")
    def name_shown(self, obj: Job) -> str:
        """The job's name, which may break after a dot or an underscore so the listing fits
        beside the filter panel."""
        return format_html_join(
            mark_safe("<wbr>"), "{}", ((part,) for part in _breakable(obj.name))
        )

    @admin.display(description="state", ordering="state")
    def state_label(self, obj: Job) -> str:
        """The state as a badge, marking scheduled and failed jobs whose time has come as due."""
        return state_badge(obj)

    @admin.display(description="waiting because")
    def waiting_because(self, obj: Job) -> str:
        """Why a job that has not run yet waits, in a few words (the whole sentence on
        hover), as the listing computed it for the page."""
        reason: holdups.HoldUp | None = getattr(obj, HOLDUP_ATTR, None)
        if reason is None:
            return "-"
        return format_html(
            '<span class="litejobs-waiting" title="{}">{}</span>', reason.message, reason.summary
        )

    @admin.display(description="error")
    def error_summary(self, obj: Job) -> str:
        """The current error's class and the first line of its message, cut short."""
        head = getattr(obj, "error_head", None)
        text = error_line(obj, head if head is not None else obj.error_message, limit=ERROR_SHOWN)
        if not text:
            return "-"
        return format_html('<span class="litejobs-error" title="{}">{}</span>', text, text)

    @admin.display(description="attempts")
    def attempts_label(self, obj: Job) -> str:
        """Attempts started out of the maximum, e.g. ``2/5``."""
        return f"{obj.attempts}/{obj.max_attempts}"

    @admin.display(description="payload")
    def safe_payload(self, obj: Job) -> str:
        """The payload with the declaration's sensitive fields redacted (all, if unknown)."""
        return _pre(showing.safe_payload(obj.name, obj.payload))

    @admin.display(description="result")
    def result_shown(self, obj: Job) -> str:
        """The body's JSON result, indented, its payload's sensitive values blanked out."""
        return _pre(showing.safe_output(obj.name, obj.payload, obj.result))

    @admin.display(description="progress")
    def progress_shown(self, obj: Job) -> str:
        """The latest ``ctx.progress(...)`` the body reported, sensitive values blanked out."""
        return _pre(showing.safe_output(obj.name, obj.payload, obj.progress))

    @admin.display(description="created by")
    def created_by(self, obj: Job) -> str:
        """The occurrence, outbox message or bulk action that created the job, linked (a
        purged one by id only)."""
        origin = origins.origin_of(obj)
        if origin is None:
            return "-"
        model, purged_by = ORIGIN_RECORDS[origin.kind]
        if purged_by and not model._default_manager.filter(pk=origin.id).exists():
            return f"{origin} (purged by {purged_by})"
        try:
            url = reverse(
                f"{self.admin_site.name}:litejobs_{model._meta.model_name}_change", args=[origin.id]
            )
        except NoReverseMatch:  # its admin is not installed (litejobs.bulk left unused)
            return str(origin)
        return format_html('<a href="{}">{}</a>', url, origin)

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
        # The operator action log names the admin user who acted.
        report(self, request, partial(verb, user_id=request.user.pk), ids, level=_job_level)

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

    # The job's page: its summary and buttons ----------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        """The job page's buttons: one POST view per verb."""
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "<path:object_id>/act/<slug:verb>/",
                self.admin_site.admin_view(require_POST(self.act_view)),
                name="{}_{}_act".format(*info),
            ),
            *super().get_urls(),
        ]

    def act_view(self, request: HttpRequest, object_id: str, verb: str) -> HttpResponse:
        """A button of the job's page: the same operator verb as the listing's action (and
        the CLI's), refused (403) to a user who may not operate on jobs."""
        if not self.has_operate_permission(request):
            raise PermissionDenied
        button = JOB_BUTTONS.get(verb)
        job_id = unquote(object_id)
        if button is None or not job_id.isdigit():
            raise Http404(f"No job verb {verb!r} for job {job_id!r}.")
        verb_of = partial(button[2], user_id=request.user.pk)  # the action log names the user
        report(self, request, verb_of, [int(job_id)], level=_job_level)
        return HttpResponseRedirect(
            reverse(f"{self.admin_site.name}:litejobs_job_change", args=[job_id])
        )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The job's page, opening with its state, why it waits, its current error and the
        buttons this user may press."""
        job = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        if job is not None:
            extra.update(self._summary(request, job))
        return super().change_view(request, object_id, form_url, extra)

    def _summary(self, request: HttpRequest, job: Job) -> dict[str, Any]:
        operate = self.has_operate_permission(request)
        due = job.run_at <= clock.now()
        return {
            "job_state": state_badge(job),
            "job_holdup": holdups.holdup_of(job),
            "job_error": error_line(job, job.error_message),
            "job_buttons": [
                (verb, label)
                for verb, (label, states, _) in JOB_BUTTONS.items()
                if operate and job.state in states and not (verb == "promote" and due)
            ],
        }

    @admin.action(description="Delete selected jobs (not running ones)", permissions=["operate"])
    def delete_jobs(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """``operations.delete`` on each selected job (running ones are refused)."""
        self._act(request, queryset, operations.delete)
