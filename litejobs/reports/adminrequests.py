"""The admin's "Request a report" page: the reports this user may run, a report's form as
its declaration takes it (a date range, one text per filter), and its request through
``Report.request`` (the output at once when it fits the request budget, else a queued run)."""

from __future__ import annotations

from datetime import date
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, reverse

from ..admin.base import admin_page, form_refused
from ..conf import settings
from ..core import clock
from ..core.durations import format_duration
from ..exceptions import LitejobsError
from ..models import ReportLimits, ReportRun
from . import auditing, limits, requesting
from .adminlimits import duration_text
from .adminscope import ScopedAdmin, refusal
from .declarations import Declaration, reports
from .output import ReportOutput
from .params import VALUE_MAX, widest

REQUEST_TEMPLATE = "admin/litejobs/reportrun/request.html"


class RequestPages(ScopedAdmin):
    """Adds the request page (``litejobs_reportrun_request``) to the report runs' admin."""

    def get_urls(self) -> list[URLPattern]:
        """The request page before the model's own URLs."""
        return [self.page_url("request/", self.request_view, "request"), *super().get_urls()]

    def request_view(self, request: HttpRequest) -> HttpResponse:
        """The reports this user may run (GET), a report's form (``?report=``) and its
        request (POST): the output itself when it fits the request budget, else its run's
        page."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        name = request.GET.get("report", "")
        if not name:
            return self._render_request(request, "Request a report", choices=_choices(request))
        declaration = reports.get(name)
        if declaration is None:
            raise Http404(f"No report named {name!r} is declared.")
        refused = refusal(declaration, request.user)
        if refused is not None:
            if request.method == "POST":  # a request, refused: audited and logged
                auditing.refused(declaration, request.user, "", refused)
            shown = {"message": refused.args[0], "code": refused.code}
            return self._render_request(
                request, f"Request {name}", declaration=declaration, refusal=shown
            )
        form = RequestForm(
            request.POST if request.method == "POST" else None,
            declaration=declaration,
            limits=limits.current(declaration),
        )
        answer = self._requested(request, declaration, form)
        if answer is not None:
            return answer
        return self._render_request(request, f"Request {name}", declaration=declaration, form=form)

    def _run_url(self, run: ReportRun) -> str:
        return reverse(f"{self.admin_site.name}:litejobs_reportrun_change", args=[run.pk])

    def _requested(
        self, request: HttpRequest, declaration: Declaration, form: RequestForm
    ) -> HttpResponse | None:
        """The download or the redirect to the queued run; None while the form has errors."""
        if not form.is_bound or not form.is_valid():
            return None
        try:
            answer = requesting.request(declaration, request.user, form.params())
        except LitejobsError as error:
            form_refused(form, error)
            return None
        if isinstance(answer, ReportOutput):
            return answer.response()
        self.message_user(
            request,
            f"Report run #{answer.pk} of {answer.report} requested: the worker writes it; this "
            "page shows its progress.",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(self._run_url(answer))

    def _render_request(self, request: HttpRequest, title: str, **context: Any) -> HttpResponse:
        choosing = reverse(f"{self.admin_site.name}:litejobs_reportrun_request")
        page = {
            "request_url": choosing,
            **(
                {"parent_url": choosing, "parent_title": "Request a report"}
                if context.get("declaration")
                else {}
            ),
            **context,
        }
        return admin_page(self, request, REQUEST_TEMPLATE, title, page)


def _choices(request: HttpRequest) -> list[dict[str, Any]]:
    """The declared reports this user may run, with what a request of each takes."""
    runnable = [d for d in reports.all() if refusal(d, request.user) is None]
    rows = ReportLimits.objects.using(settings.DATABASE).filter(
        report__in=[d.name for d in runnable]
    )
    ranges = {row.report: row.max_range for row in rows}
    return [
        {
            "declaration": declaration,
            "max_range": duration_text(ranges.get(declaration.name, declaration.limits.max_range)),
            "filters": ", ".join(declaration.filters) or "-",
            "audit": declaration.audit,
        }
        for declaration in runnable
    ]


class RequestForm(forms.Form):
    """A report's request as its declaration takes it: a date range (required when its
    limits bound the range) and one text per declared filter."""

    def __init__(
        self, *args: Any, declaration: Declaration, limits: ReportLimits, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        longest = limits.max_range
        end = (
            f"The last day read (at most {format_duration(longest)} with both ends counted: "
            "its max_range limit)."
            if longest is not None
            else "The last day read (give both, or neither to read every day)."
        )
        self.fields["start"] = _day(longest is not None, "The first day read.")
        self.fields["end"] = _day(longest is not None, end)
        for name in declaration.filters:
            self.fields[name] = forms.CharField(
                required=False,
                max_length=VALUE_MAX,
                help_text=f"Only the rows whose {name} is this value; empty: every {name}.",
            )
        if longest is not None and not self.is_bound:
            self.initial = widest(longest, clock.now())

    def params(self) -> dict[str, date | str]:
        """The parameters given (empty fields left out), for ``Report.request``."""
        return {name: value for name, value in self.cleaned_data.items() if value not in (None, "")}


def _day(required: bool, help_text: str) -> forms.DateField:
    return forms.DateField(
        required=required,
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        help_text=help_text,
    )
