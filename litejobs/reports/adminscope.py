"""Who sees which report records in the admin, and how their pages show them.

A superuser sees every run and audit record; any other user sees those of the reports whose
permission they hold, for the tenant each report's ``tenant=`` gives them, and nothing of the
others (another tenant's run page is a 404). Requesting goes through ``Report.request`` and
downloading through ``litejobs.reports.views.download``, which check the permission and the
tenant again.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from ..admin.base import NamedFilter, ReadOnlyAdmin
from ..core import clock, times
from ..core.durations import format_age
from ..exceptions import LitejobsError
from . import requesting
from .declarations import Declaration, reports
from .errors import ReportDenied

#: The stylesheet of the reports' pages: state colours, the Download and Cancel buttons.
STYLE = {"all": ("litejobs/reports.css",)}
#: Where the set of reports a user may read is kept for the rest of the request.
_READABLE = "_litejobs_report_tenants"


def readable(request: HttpRequest) -> dict[str, str]:
    """The reports this user may read, each with the tenant its ``tenant=`` gives them (the
    same checks as a request and a download: the report's permission, a known tenant)."""
    found: dict[str, str] | None = getattr(request, _READABLE, None)
    if found is None:
        found = {}
        for declaration in reports.all():
            try:
                requesting.allowed(declaration, request.user)
                found[declaration.name] = requesting.tenant_of(declaration, request.user)
            except ReportDenied:
                continue
        setattr(request, _READABLE, found)
    return found


def scoped(request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
    """The rows this user may see: every row for a superuser; else the rows of the reports
    they may read, of their tenant for each (none of undeclared reports)."""
    if request.user.is_superuser:
        return queryset
    match = Q(pk__in=[])
    for name, tenant in readable(request).items():
        match |= Q(report=name, tenant=tenant)
    return queryset.filter(match)


def refusal(declaration: Declaration, user: Any) -> LitejobsError | None:
    """Why this user may not request the report (the refusal ``request`` would raise before
    reading anything), or None."""
    try:
        requesting.complete(declaration)
        requesting.allowed(declaration, user)
        requesting.tenant_of(declaration, user)
    except LitejobsError as error:
        return error
    return None


class ReportFilter(NamedFilter):
    """Filter by report; the choices are the declared reports this user may read."""

    title = "report"
    parameter_name = field = "report"

    def names(self, request: HttpRequest) -> Iterable[str]:
        """Every declared report for a superuser, the readable ones for others."""
        if request.user.is_superuser:
            return {d.name for d in reports.all()}
        return readable(request)


class ScopedAdmin(ReadOnlyAdmin):
    """Records of reports, each user seeing those of their own tenant (``scoped``); a record
    out of scope is not found (404), as if it did not exist."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """The records this user may see."""
        return scoped(request, super().get_queryset(request))

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Any:
        """The record, or a 404 when it is out of this user's scope (or does not exist)."""
        found = super().get_object(request, object_id, from_field)
        if found is None:
            raise Http404(f"No {self.opts.verbose_name} {object_id} that you may see.")
        return found


def ago_or_in(value: datetime | None) -> str:
    """An instant as an age from now ("5m ago", "in 55m"), the instant itself on hover."""
    if value is None:
        return "-"
    now = clock.now()
    age = format_age(abs(now - value))
    text = f"{age} ago" if value <= now else f"in {age}"
    shown = '<span title="{}" class="litejobs-nowrap">{}</span>'
    return format_html(shown, times.when(value), text)


def record_link(model_admin: admin.ModelAdmin[Any], model: str, pk: int | None, text: str) -> str:
    """A link to the page of litejobs' ``model`` record ``pk`` in this admin site; ``-`` for
    none."""
    if pk is None:
        return "-"
    url = reverse(f"{model_admin.admin_site.name}:litejobs_{model}_change", args=[pk])
    return format_html('<a href="{}">{}</a>', url, text)


def as_pairs(value: dict[str, Any]) -> str:
    """A run's or a read's parameters as ``name=value`` pairs."""
    return ", ".join(f"{name}={value[name]}" for name in value) or "-"
