"""Queues in the admin: one overview of every queue's counts, with pause and resume.

The overview replaces the QueueState changelist: queues exist in job rows and declarations,
not only as switches, so it is built from ``queues.queue_overview`` (one GROUP BY over the
jobs, one read of the switches) rather than from QueueState rows alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from ..core.durations import format_age, format_duration
from ..exceptions import LitejobsError
from ..jobs import queues
from ..jobs.ratelimits import queue_rate
from ..models import QueueState
from .base import ReadOnlyAdmin, acted_by, admin_page, refused_error
from .joblisting import listing_url


class QueueActionForm(forms.Form):
    """Pause or resume the ticked queues; a pause needs a reason."""

    action = forms.ChoiceField(choices=[("pause", "Pause"), ("resume", "Resume")])
    queue = forms.MultipleChoiceField(choices=[], error_messages={"required": "Tick a queue."})
    reason = forms.CharField(
        required=False,
        max_length=1000,
        help_text="Why the queue is paused (required to pause): the next operator reads it.",
    )

    def __init__(self, *args: Any, queues: Iterable[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.MultipleChoiceField, self.fields["queue"]).choices = [
            (name, name) for name in queues
        ]


@admin.register(QueueState)
class QueueStateAdmin(ReadOnlyAdmin):
    """Every queue with ready / scheduled / running / failed / dead counts and its switch."""

    list_display = ("name", "paused", "reason", "changed_by", "changed_at")
    fields = ("name", "paused", "reason", "changed_by", "changed_at")
    readonly_fields = fields
    overview_template = "admin/litejobs/queuestate/overview.html"

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The queue overview (GET) and its pause / resume form (POST)."""
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        summaries = queues.queue_overview()
        names = [s.name for s in summaries]
        if request.method == "POST":
            if not self.has_operate_permission(request):
                raise PermissionDenied
            # A queue with no jobs and no switch yet may be paused ahead of its first job.
            form = QueueActionForm(
                request.POST, queues=sorted({*names, *request.POST.getlist("queue")})
            )
            self._apply(request, form)
            return HttpResponseRedirect(request.get_full_path())
        jobs_url = reverse(f"{self.admin_site.name}:litejobs_job_changelist")
        # A count links to the job list only for a user who may open it.
        linked = request.user.has_perm("litejobs.view_job")
        rows = [
            {
                "summary": summary,
                "counts": [
                    (
                        summary.counts[state.value],
                        listing_url(jobs_url, queue=summary.name, state=state) if linked else "",
                    )
                    for state in queues.OVERVIEW_STATES
                ],
                "oldest_due": (
                    format_age(summary.oldest_due_age) if summary.oldest_due_age is not None else ""
                ),
                "rate": _rate_text(summary.name),
            }
            for summary in summaries
        ]
        context = {
            "app_label": self.opts.app_label,
            "states": [state.label for state in queues.OVERVIEW_STATES],
            "rows": rows,
            "form": QueueActionForm(queues=names),
            "can_operate": self.has_operate_permission(request),
            **(extra_context or {}),
        }
        return admin_page(self, request, self.overview_template, "Queues", context)

    def _apply(self, request: HttpRequest, form: QueueActionForm) -> None:
        if not form.is_valid():
            problems = "; ".join(
                f"{name}: {' '.join(str(error) for error in errors)}"
                for name, errors in form.errors.items()
            )
            self.message_user(request, f"Nothing changed: {problems}", messages.ERROR)
            return
        by = acted_by(request)
        action, reason = form.cleaned_data["action"], form.cleaned_data["reason"]
        user_id = request.user.pk  # the operator action log names the admin user
        for queue in form.cleaned_data["queue"]:
            try:
                if action == "pause":
                    queues.pause(queue, reason=reason, by=by, user_id=user_id)
                    text = f"Queue {queue!r} is paused: workers claim none of its jobs."
                else:
                    queues.resume(queue, by=by, reason=reason, user_id=user_id)
                    text = f"Queue {queue!r} is running: workers claim its due jobs."
            except LitejobsError as error:
                refused_error(request, error)
            else:
                self.message_user(request, text, messages.SUCCESS)


def _rate_text(queue: str) -> str:
    """The queue's rate as the overview shows it (``100 per 1m``), or "" without one (or
    with an invalid one, which the check litejobs.E090 reports)."""
    try:
        rate = queue_rate(queue)
    except LitejobsError:
        return ""
    return f"{rate.limit:,} per {format_duration(rate.window)}" if rate else ""
