"""What an operator does to jobs in the admin: the listing's retry / cancel / run now /
delete actions on the selected jobs and the job page's buttons, each the operator verb of
``litejobs.jobs.operations`` (written to the operator action log with the admin user), as a
mixin of the jobs' admin; and the summary the job's page opens with."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, reverse
from django.views.decorators.http import require_POST

from ..core import clock
from ..core.enums import LIVE
from ..jobs import holdups, operations
from ..jobs.operations import PROMOTABLE, RETRYABLE, ActionResult
from ..models import Job
from .base import ACTION_LIMIT, ReadOnlyAdmin, report
from .jobcolumns import error_line, state_badge

#: The job page's buttons: verb -> (label, the states it applies to, the operator verb). The
#: verbs are those of the listing's actions and of ``manage.py litejobs``.
JOB_BUTTONS: dict[str, tuple[str, tuple[str, ...], Callable[..., ActionResult]]] = {
    "retry": ("Retry", RETRYABLE, operations.retry),
    "promote": ("Run now", PROMOTABLE, operations.promote),
    "cancel": ("Cancel", LIVE, operations.cancel),
}


def _job_level(outcome: ActionResult) -> int:
    """A cancel that only asked a running job to stop is a warning: it has not stopped yet."""
    return messages.WARNING if outcome.action == "cancel-requested" else messages.SUCCESS


class JobActions(ReadOnlyAdmin):
    """The listing's actions on the selected jobs and the job page's buttons, for users who
    may operate."""

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

    @admin.action(description="Delete selected jobs (not running ones)", permissions=["operate"])
    def delete_jobs(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """``operations.delete`` on each selected job (running ones are refused)."""
        self._act(request, queryset, operations.delete)

    # The job's page: its summary and buttons ----------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        """The job page's buttons: one POST view per verb."""
        act = require_POST(self.act_view)
        return [self.page_url("<path:object_id>/act/<slug:verb>/", act, "act"), *super().get_urls()]

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

    def change_context(self, request: HttpRequest, object_id: str) -> dict[str, Any]:
        """The job's page opens with its state, why it waits, its current error and the
        buttons this user may press."""
        job = self.get_object(request, unquote(object_id))
        return {} if job is None else self._summary(request, job)

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
