"""How a job shows in the admin: its columns in the listing and the fields of its page (the
state as a badge, why it waits, its current error, its payload, result and progress with what
its declaration calls sensitive hidden, what created it), as a mixin of the jobs' admin."""

from __future__ import annotations

import json
import re
from typing import Any

from django.contrib import admin
from django.db.models import Model
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from ..core import clock
from ..jobs import holdups, origins, showing
from ..jobs.steps import HELD
from ..models import BulkAction, Job, JobState, Occurrence, OutboxMessage
from .base import ReadOnlyAdmin, field_display, time_display

#: The attribute the listing puts each job's ``HoldUp`` under (computed for the page).
HOLDUP_ATTR = "_litejobs_holdup"
#: Characters of the error's first line the listing shows (the job's page shows it whole).
ERROR_SHOWN = 80


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


class JobColumns(ReadOnlyAdmin):
    """The jobs' columns and their page's fields, each an ``@admin.display``."""

    _run_at = time_display(Job, "run_at")

    @admin.display(description="run at", ordering="run_at")
    def run_at_shown(self, obj: Job) -> str:
        """When the job is due. A job held until other jobs end or an operator acts has no
        time of its own (its ``run_at`` is a placeholder at the end of year 9999): it says so
        instead of showing that placeholder as a date."""
        if obj.run_at.year == HELD.year:
            return "when released"
        return self._run_at(obj)

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
