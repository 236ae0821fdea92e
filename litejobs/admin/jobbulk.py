"""The jobs list's "act on every job matching this filter": retry, cancel or delete up to a
limit of the jobs the current filter shows, through ``filtered.bulk`` (one transaction, one
operator action log row naming the jobs it changed), answering how many changed and how many
still match.

The page counts the matching jobs first (``filtered.preview``) and the action applies only
while the filter still matches those jobs: when they changed in between, nothing changes and
the page shows the new count and asks again."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.urls import URLPattern, path, reverse

from ..core.enums import OperatorVerb
from ..exceptions import InvalidInput, LitejobsError
from ..jobs import filtered
from ..jobs.filtered import JobFilter
from .base import ReadOnlyAdmin, acted_by, admin_page, refused_error
from .jobfilters import AFTER, BEFORE, IDS, NAME, QUEUE, STATE, check_state, parse_ids

BULK_TEMPLATE = "admin/litejobs/job/bulk.html"
#: The changelist's query parameters the bulk action reads, and those it may ignore (order,
#: page links); any other (a search) is refused: the action would match more than the list
#: shows.
FILTER_PARAMETERS = (STATE, QUEUE, NAME, IDS)
IGNORED_PARAMETERS = ("o", "p", AFTER, BEFORE)
#: Job ids the page names (the rest counted).
IDS_SHOWN = 20


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
        max_value=filtered.BULK_MAX,
        initial=filtered.BULK_DEFAULT,
        help_text=f"At most this many jobs change now (up to {filtered.BULK_MAX}); run it "
        "again for the rest.",
    )
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        max_length=1000,
        help_text="Recorded in the operator action log with your name and the time.",
    )
    #: The preview's digest of the matching jobs: the action applies only to those.
    seen = forms.CharField(widget=forms.HiddenInput, required=False)


def filter_of(query: QueryDict) -> JobFilter:
    """The bulk filter the changelist's query describes; ``InvalidInput`` saying why it cannot
    be used (``listing-filter-invalid``, ``filter-missing``)."""
    unknown = sorted(key for key in query if key not in (*FILTER_PARAMETERS, *IGNORED_PARAMETERS))
    if unknown:
        raise InvalidInput(
            "Acting on every matching job works with the state, queue, job and job ids filters "
            "only; clear the search and other filters first.",
            code="listing-filter-invalid",
        )
    state = check_state(query.get(STATE, ""))
    found = JobFilter(
        states=(state,) if state else (),
        name=query.get(NAME, ""),
        queue=query.get(QUEUE, ""),
        ids=parse_ids(query.get(IDS, "")) if query.get(IDS) else (),
    )
    if found.is_empty:
        raise InvalidInput(
            "Choose a filter first (state, queue, job or job ids): acting on every job at once "
            "is refused to avoid accidents.",
            code="filter-missing",
        )
    return found


def _described(found: JobFilter) -> str:
    parts = [f"state {found.states[0]}"] if found.states else []
    parts += [f"queue {found.queue}"] if found.queue else []
    parts += [f"job {found.name}"] if found.name else []
    if found.ids:
        more = len(found.ids) - IDS_SHOWN
        ids = ", ".join(map(str, found.ids[:IDS_SHOWN])) + (f" and {more} more" if more > 0 else "")
        parts.append(f"jobs {ids}")
    return ", ".join(parts)


class BulkOverFilterAdmin(ReadOnlyAdmin):
    """Adds the bulk page (``litejobs_job_bulk``) and the changelist's link to it, for users
    who may operate."""

    def get_urls(self) -> list[URLPattern]:
        """The bulk page before the model's own URLs."""
        view = self.admin_site.admin_view(self.bulk_view)
        return [path("bulk/", view, name="litejobs_job_bulk"), *super().get_urls()]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The jobs list, with the bulk link for users who may operate."""
        can_bulk = self.has_operate_permission(request)
        context = {"can_bulk": can_bulk, **(extra_context or {})}
        return super().changelist_view(request, extra_context=context)

    def bulk_view(self, request: HttpRequest) -> HttpResponse:
        """The form with the matching jobs' count (GET), then ``filtered.bulk`` (POST) and
        back to the filtered list; the form again, with the new count, when the matching jobs
        changed in between."""
        if not self.has_operate_permission(request):
            raise PermissionDenied
        back = reverse(f"{self.admin_site.name}:litejobs_job_changelist")
        back = f"{back}?{request.GET.urlencode()}"
        try:
            found = filter_of(request.GET)
        except InvalidInput as error:
            refused_error(request, error)
            return HttpResponseRedirect(back)
        form = JobBulkForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                self._apply(request, found, form.cleaned_data)
            except LitejobsError as error:
                refused_error(request, error)
                if error.code == "filter-changed":  # asked again, with the new count
                    return self._form_page(request, found, back, again=form.cleaned_data)
            return HttpResponseRedirect(back)
        return self._form_page(request, found, back)

    def _form_page(
        self,
        request: HttpRequest,
        found: JobFilter,
        back: str,
        *,
        again: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The form, counting the matching jobs now (the action applies only to those): as
        posted with its errors, or filled ``again`` with what the operator chose."""
        seen = filtered.preview(found)
        if request.method == "POST" and again is None:
            data = request.POST.copy()
            data["seen"] = seen.seen
            form = JobBulkForm(data)
        else:
            form = JobBulkForm(initial={**(again or {}), "seen": seen.seen})
        context = {
            "form": form,
            "described": _described(found),
            "matching": f"{seen.count}+" if seen.capped else str(seen.count),
            "matching_count": seen.count,
            "back": back,
        }
        title = "Act on every job matching the filter"
        return admin_page(self, request, BULK_TEMPLATE, title, context)

    def _apply(self, request: HttpRequest, found: JobFilter, data: dict[str, Any]) -> None:
        """``filtered.bulk`` on the jobs the form's preview saw, and what it did in words."""
        verb = OperatorVerb(data["verb"])
        counts = filtered.bulk(
            verb,
            found,
            limit=data["limit"],
            by=acted_by(request),
            reason=data["reason"],
            user_id=request.user.pk,
            seen=data["seen"],
        )
        self.message_user(
            request,
            f"{verb.label}: {filtered.bulk_summary(counts)}",
            messages.SUCCESS,
        )
