"""What the litejobs admin pages share: read-only by default, operator actions by permission."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import DateTimeField, Model, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils.html import format_html

from ..core import times
from ..core.durations import format_duration
from ..exceptions import LitejobsError
from . import refusals

#: Jobs one admin action may touch: a select-across of a million rows is refused, not run.
ACTION_LIMIT = 500


class NoHandEdits:
    """Rows and records only the engine (or an audited action) writes: nothing to add, change
    or delete by hand, since an edit would bypass the conditional transitions."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Never: rows are written by enqueues, runtimes and actions, not typed in."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Never: detail pages are views."""
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Never: finished rows leave through ``purge`` by retention, live ones by cancel."""
        return False


class AdminPages(admin.ModelAdmin):
    """What every litejobs model admin's pages share: litejobs' stylesheet
    (``litejobs/admin.css``: the breadcrumbs, tables that scroll inside their box), and
    refusals told in the admin's chrome, why and the way back (``refusals``), for its own
    views as for Django's."""

    class Media:
        css = {"all": ("litejobs/admin.css",)}

    #: Instant fields shown with how far from now beside them (an audit list's ``at``).
    times_ago: tuple[str, ...] = ()

    def __init__(self, model: type[Model], admin_site: admin.AdminSite) -> None:
        super().__init__(model, admin_site)
        #: Each instant field's column (``_instant_column``), by the field's name.
        self.instant_columns = {
            field.name: _instant_column(model, field.name, field.name in self.times_ago)
            for field in self.opts.get_fields()
            if isinstance(field, DateTimeField)
        }
        # The subclasses' own ``get_list_display`` read it here too.
        self.list_display = self._instants(self.list_display)

    def _instants(self, names: Any, only: Iterable[Any] | None = None) -> Any:
        """``names`` (nested lists too) with each instant field's name swapped for its column,
        so it shows as every litejobs page writes times (``instant_html``: to the second, with
        its zone) rather than as Django's default (to the minute, in the locale's words);
        with ``only``, just the names whose column it holds."""
        if isinstance(names, str):
            column = self.instant_columns.get(names)
            return column if column is not None and (only is None or column in only) else names
        if isinstance(names, list | tuple):
            return type(names)(self._instants(name, only) for name in names)
        return names

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """The read-only fields, instants as litejobs writes them."""
        return self._instants(super().get_readonly_fields(request, obj))

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        """The record page's fields, its read-only instants as litejobs writes them."""
        shown = list(self.get_readonly_fields(request, obj))
        return [
            (title, {**options, "fields": self._instants(options.get("fields", ()), shown)})
            for title, options in super().get_fieldsets(request, obj)
        ]

    def _get_obj_does_not_exist_redirect(
        self, request: HttpRequest, opts: Any, object_id: str
    ) -> HttpResponseRedirect:
        """A record that is not there (deleted, purged, mistyped) is a 404 page saying so, with
        the ways back, rather than Django's redirect to the admin's home."""
        raise Http404(
            f"There is no {opts.verbose_name} {object_id} among the {opts.verbose_name_plural}: "
            "it may have been deleted, purged after its retention, or mistyped."
        )

    def page_url(self, route: str, view: Callable[..., HttpResponseBase], verb: str) -> URLPattern:
        """A page of this admin's own at ``route``, served inside the admin site (its login and
        permission checks), named ``<app>_<model>_<verb>`` as Django names the model's pages."""
        name = f"{self.opts.app_label}_{self.opts.model_name}_{verb}"
        return path(route, self.admin_site.admin_view(view), name=name)

    def change_context(self, request: HttpRequest, object_id: str) -> dict[str, Any]:
        """What a record's page shows beside its fields (its buttons, its summary): nothing
        unless an admin says."""
        return {}

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The record's page, with what ``change_context`` adds."""
        extra = {**self.change_context(request, object_id), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra)

    @property
    def urls(self) -> list[URLPattern]:
        """Every view of ``get_urls``, its 403 and 404 answered in the admin's chrome."""
        return [
            URLPattern(
                pattern.pattern,
                refusals.in_chrome(self, pattern.callback),
                pattern.default_args,
                pattern.name,
            )
            for pattern in self.get_urls()
            if isinstance(pattern, URLPattern)
        ]


def admin_page(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    template: str,
    title: str,
    context: dict[str, Any],
    *,
    status: int = 200,
) -> TemplateResponse:
    """A page of litejobs' own under ``model_admin``, in the admin's chrome: the site's
    context, ``title`` and the model's ``opts``, then ``context``; its links reverse in the
    admin site's own namespace."""
    request.current_app = model_admin.admin_site.name
    shown = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "subtitle": None,
        "opts": model_admin.opts,
        **context,
    }
    return TemplateResponse(request, template, shown, status=status)


def _instant_column(model: type[Model], name: str, ago: bool) -> Callable[[Any], str]:
    """A column (or read-only field) showing the instant field ``name`` as ``instant_html``
    writes it; named as the field, so its cell keeps the field's CSS class."""
    field = model._meta.get_field(name)

    @admin.display(description=getattr(field, "verbose_name", name), ordering=name)
    def shown(obj: Any) -> str:
        value = getattr(obj, name)
        return "-" if value is None else instant_html(value, ago=ago)

    shown.__name__ = name
    return shown


class ReadOnlyAdmin(NoHandEdits, AdminPages):
    """Rows only the engine writes.

    Operators act through explicit actions (``has_operate_permission``), never by editing a
    row, so every change goes through ``litejobs.jobs.operations`` and its conditional statements.
    """

    #: The model permission that lets a user run this page's actions.
    operate_permission = "change"

    def has_operate_permission(self, request: HttpRequest) -> bool:
        """May this user retry, cancel, pause...? The model's ``change`` permission says."""
        opts = self.opts
        codename = f"{self.operate_permission}_{opts.model_name}"
        return request.user.has_perm(f"{opts.app_label}.{codename}")


class RecordInline(NoHandEdits, admin.TabularInline):
    """Records kept under a row (a job's attempts and steps, an occurrence's replays): read-only,
    and readable by whoever may view the row they belong to (``parent_view_permission``)."""

    extra = 0
    can_delete = False
    #: e.g. "litejobs.view_job": the permission that shows the parent row.
    parent_view_permission = ""
    #: What the page says instead of an empty table's bare headers (``No steps.``).
    empty_text = "None."
    template = "admin/litejobs/record_inline.html"

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Whoever may view the parent row may read its records."""
        return request.user.has_perm(self.parent_view_permission)


class ChoiceFilter(admin.SimpleListFilter, ABC):
    """A list filter of a few options, each keeping the rows ``rows`` answers: a table rather
    than a ``lookups`` and a ``queryset`` written again for each filter. Each filter says its
    ``options`` and ``rows`` (abstract: a filter missing one cannot be built)."""

    @abstractmethod
    def options(self, request: HttpRequest) -> list[tuple[str, str]]:
        """(value, label) of each option, in the order shown."""

    @abstractmethod
    def rows(self, value: str) -> Q:
        """The rows the option ``value`` keeps (all of them for a value it does not know)."""

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, str]]:
        """The options."""
        return self.options(request)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        """The rows of the selected option (every row when none is)."""
        value = self.value()
        return queryset.filter(self.rows(str(value))) if value else queryset


class NamedFilter(ChoiceFilter):
    """A filter by one field's value among declared names (``names``), plus the one selected
    (a name no longer declared still filters): the choices come from declarations, never from
    a DISTINCT over the table."""

    #: The field whose value the filter matches.
    field = ""

    @abstractmethod
    def names(self, request: HttpRequest) -> Iterable[str]:
        """The declared names this user may pick."""

    def options(self, request: HttpRequest) -> list[tuple[str, str]]:
        """The declared names, sorted, with the selected one among them."""
        names = set(self.names(request))
        if self.value():
            names.add(str(self.value()))
        return [(name, name) for name in sorted(names)]

    def rows(self, value: str) -> Q:
        """The rows whose field holds ``value``."""
        return Q(**{self.field: value})


def field_display(
    model: type[Model], name: str, show: Callable[[Any], str]
) -> Callable[[Any, Any], str]:
    """An admin column showing the field ``name`` as ``show`` writes it (``-`` when empty)."""

    @admin.display(
        description=getattr(model._meta.get_field(name), "verbose_name", name), ordering=name
    )
    def shown(model_admin: Any, obj: Any) -> str:
        value = getattr(obj, name)
        return "-" if value is None else show(value)

    return shown


def instant_html(instant: datetime, *, ago: bool = False) -> str:
    """An instant as every litejobs page writes it, to the second with its zone
    (``13:00:05 UTC``), the full timestamp on hover; with how far from now beside it when
    ``ago`` (``13:00:05 UTC (4m 10s ago)``)."""
    shown = format_html(
        '<time datetime="{}" title="{}">{}</time>',
        instant.isoformat(),
        times.full(instant),
        times.when(instant),
    )
    if ago:
        shown = format_html('{} <span class="litejobs-ago">({})</span>', shown, times.ago(instant))
    return shown


def time_display(model: type[Model], name: str, *, ago: bool = False) -> Callable[[Any, Any], str]:
    """An admin column showing the instant field ``name`` as ``instant_html`` writes it."""
    return field_display(model, name, partial(instant_html, ago=ago))


def duration_display(model: type[Model], name: str) -> Callable[[Any, Any], str]:
    """An admin column showing the duration field ``name`` as people write it (``2s``, ``90d``)
    rather than as Python prints a ``timedelta`` (``0:00:02``, ``90 days, 0:00:00``)."""
    return field_display(model, name, format_duration)


T = TypeVar("T")


def once_per(holder: object, name: str, compute: Callable[[], T]) -> T:
    """``compute()``, kept on ``holder`` (the request, or a row of the page) as ``name``, so
    a page that asks for it on every row computes it once."""
    kept = vars(holder)
    if name not in kept:
        kept[name] = compute()
    found: T = kept[name]
    return found


def acted_by(request: HttpRequest) -> str:
    """Who acts, as recorded and logged by ``litejobs.jobs.operations``: the admin user name."""
    return request.user.get_username() or f"user:{request.user.pk}"


def refused(request: HttpRequest, message: str, code: str) -> None:
    """Tell staff why, in words: the stable code goes to the message's tags (a CSS class, for
    operators, scripts and tests), not into the sentence; logs and the CLI keep it."""
    messages.error(request, message, extra_tags=code)


def refused_error(request: HttpRequest, error: LitejobsError) -> None:
    """``refused`` for a litejobs error: its sentence, and its code in the tags."""
    refused(request, error.args[0], error.code)


def form_refused(form: forms.BaseForm, error: LitejobsError) -> None:
    """A form's error for a litejobs error: its sentence shown, its code the error's code."""
    form.add_error(None, ValidationError(error.args[0], code=error.code))


def report(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    verb: Callable[..., Any],
    keys: Iterable[Any],
    *,
    level: Callable[[Any], int] | None = None,
) -> None:
    """Apply an operator verb (``verb(key, by=who)``) to each key and tell the user, one by
    one, what happened or why not. ``level(outcome)`` picks a success's message level."""
    by = acted_by(request)
    for key in keys:
        try:
            outcome = verb(key, by=by)
        except LitejobsError as error:
            refused_error(request, error)
        else:
            shown = level(outcome) if level is not None else messages.SUCCESS
            model_admin.message_user(request, outcome.message, shown)


__all__ = [
    "ACTION_LIMIT",
    "AdminPages",
    "ChoiceFilter",
    "NamedFilter",
    "ReadOnlyAdmin",
    "RecordInline",
    "acted_by",
    "admin_page",
    "duration_display",
    "field_display",
    "form_refused",
    "instant_html",
    "refused",
    "refused_error",
    "report",
]
