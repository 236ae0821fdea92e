"""The jobs list's "act on every job matching this filter": retry, cancel or delete up to a
limit of the jobs the current filter shows, through ``operations.bulk`` (one transaction, one
operator action log row), answering how many changed and how many still match."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from ..core.enums import OperatorVerb
from ..exceptions import LitejobsError
from ..jobs import operations
from ..jobs.operations import JobFilter
from ..models import JobState
from .base import acted_by, refused_error

BULK_TEMPLATE = "admin/litejobs/job/bulk.html"
#: The changelist's query parameters the bulk action reads, and those it may ignore (order,
#: page); any other (a search) is refused: the action would match more than the list shows.
FILTER_PARAMETERS = ("state__exact", "queue", "name")
IGNORED_PARAMETERS = ("o", "p")
#: Matching jobs the form counts (a count over millions of rows is not run for a page).
COUNT_CAP = 10_000


class JobBulkForm(forms.Form):
    """What to do with the matching jobs, to how many at most, and why."""

    verb = forms.ChoiceField(
        label="action",
        choices=[
            (OperatorVerb.RETRY, "Retry (done, dead, cancelled, failed jobs back to ready)"),
            (OperatorVerb.CANCEL, "Cancel (live jobs; running ones: cancellation requested)"),
            (OperatorVerb.DELETE, "Delete (every job that is not running)"),
        ],
    )
    limit = forms.IntegerField(
        min_value=1,
        max_value=operations.BULK_MAX,
        initial=operations.BULK_DEFAULT,
        help_text=f"At most this many jobs change now (up to {operations.BULK_MAX}); run it "
        "again for the rest.",
    )
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        max_length=1000,
        help_text="Recorded in the operator action log with your name and the time.",
    )


def filter_of(query: QueryDict) -> JobFilter | str:
    """The bulk filter the changelist's query describes, or why it cannot be used."""
    unknown = sorted(key for key in query if key not in (*FILTER_PARAMETERS, *IGNORED_PARAMETERS))
    if unknown:
        return (
            "Acting on every matching job works with the state, queue and job filters only; "
            "clear the search and other filters first."
        )
    state = query.get("state__exact", "")
    if state and state not in JobState.values:
        return f"{state!r} is not a job state."
    found = JobFilter(
        states=(state,) if state else (), name=query.get("name", ""), queue=query.get("queue", "")
    )
    if found.is_empty:
        return (
            "Choose a filter first (state, queue or job): acting on every job at once is "
            "refused to avoid accidents."
        )
    return found


def _described(found: JobFilter) -> str:
    parts = [f"state {found.states[0]}"] if found.states else []
    parts += [f"queue {found.queue}"] if found.queue else []
    parts += [f"job {found.name}"] if found.name else []
    return ", ".join(parts)


class BulkOverFilterAdmin(admin.ModelAdmin):
    """Adds the bulk page (``litejobs_job_bulk``) and the changelist's link to it."""

    def get_urls(self) -> list[URLPattern]:
        """The bulk page before the model's own URLs."""
        view = self.admin_site.admin_view(self.bulk_view)
        return [path("bulk/", view, name="litejobs_job_bulk"), *super().get_urls()]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The jobs list, with the bulk link for users who may operate."""
        can_bulk = self.has_operate_permission(request)  # type: ignore[attr-defined]
        context = {"can_bulk": can_bulk, **(extra_context or {})}
        return super().changelist_view(request, extra_context=context)

    def bulk_view(self, request: HttpRequest) -> HttpResponse:
        """The form (GET), then ``operations.bulk`` (POST) and back to the filtered list."""
        if not self.has_operate_permission(request):  # type: ignore[attr-defined]
            raise PermissionDenied
        changelist = reverse(f"{self.admin_site.name}:litejobs_job_changelist")
        found = filter_of(request.GET)
        if isinstance(found, str):
            self.message_user(request, found, messages.ERROR)
            return HttpResponseRedirect(f"{changelist}?{request.GET.urlencode()}")
        form = JobBulkForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            self._apply(request, found, form.cleaned_data)
            return HttpResponseRedirect(f"{changelist}?{request.GET.urlencode()}")
        matching = found.apply(self.get_queryset(request)).order_by()[: COUNT_CAP + 1].count()
        context = {
            **self.admin_site.each_context(request),
            "title": "Act on every job matching the filter",
            "subtitle": None,
            "opts": self.opts,
            "form": form,
            "described": _described(found),
            "matching": f"{COUNT_CAP}+" if matching > COUNT_CAP else str(matching),
            "matching_count": matching,
            "back": f"{changelist}?{request.GET.urlencode()}",
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, BULK_TEMPLATE, context)

    def _apply(self, request: HttpRequest, found: JobFilter, data: dict[str, Any]) -> None:
        verb = OperatorVerb(data["verb"])
        try:
            counts = operations.bulk(
                verb,
                found,
                limit=data["limit"],
                by=acted_by(request),
                reason=data["reason"],
                user_id=request.user.pk,
            )
        except LitejobsError as error:
            refused_error(request, error)
            return
        self.message_user(
            request,
            f"{verb.label}: {operations.bulk_summary(counts)}",
            messages.SUCCESS,
        )
