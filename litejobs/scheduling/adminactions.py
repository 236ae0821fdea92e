"""What an operator does to schedules and occurrences in the admin: disable (with a reason) and
enable schedules, replay occurrences (with a reason), from the lists' actions or the buttons of
a record's page, each through ``litejobs.scheduling.operations`` (the functions ``manage.py
litejobs`` calls); as mixins of their admins."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, reverse

from ..admin.base import ACTION_LIMIT, ReadOnlyAdmin, report
from ..admin.reasons import ask_reason, ask_reason_on_page, selected_hidden
from ..models import Occurrence, Schedule
from . import operations


class OperatedPages(ReadOnlyAdmin):
    """A record's page that shows its buttons to users who may operate."""

    def change_context(self, request: HttpRequest, object_id: str) -> dict[str, Any]:
        """The record's page shows its buttons to users who may operate."""
        return {"can_operate": self.has_operate_permission(request)}


class ScheduleSwitches(OperatedPages):
    """Disable and enable schedules: the list's actions and the schedule page's buttons."""

    def get_urls(self) -> list[URLPattern]:
        """Per-schedule disable and enable pages (the buttons on the schedule's page)."""
        return [
            self.page_url("<path:object_id>/disable/", self.disable_view, "disable"),
            self.page_url("<path:object_id>/enable/", self.enable_view, "enable"),
            *super().get_urls(),
        ]

    def _disable(self, request: HttpRequest, rows: list[Schedule], reason: str) -> None:
        def disable(name: str, by: str) -> operations.SwitchOutcome:
            return operations.disable(name, reason=reason, by=by, user_id=request.user.pk)

        report(self, request, disable, [row.name for row in rows])

    def _enable(self, request: HttpRequest, rows: list[Schedule]) -> None:
        def enable(name: str, by: str) -> operations.SwitchOutcome:
            return operations.enable(name, by=by, user_id=request.user.pk)

        report(self, request, enable, [row.name for row in rows])

    @admin.action(description="Disable selected schedules (asks why)", permissions=["operate"])
    def disable_schedules(
        self, request: HttpRequest, queryset: QuerySet[Any]
    ) -> HttpResponse | None:
        """Ask for a reason, then ``operations.disable`` each selected schedule."""
        rows = list(queryset[:ACTION_LIMIT])
        return ask_reason(
            self,
            request,
            rows,
            title="Disable schedules",
            intro="No new occurrence is planned until they are enabled again; an occurrence "
            "already claimed by a worker finishes.",
            hidden=selected_hidden("disable_schedules", rows),
            apply=lambda reason: self._disable(request, rows, reason),
        )

    @admin.action(description="Enable selected schedules", permissions=["operate"])
    def enable_schedules(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """``operations.enable`` each selected schedule (planning resumes from now)."""
        self._enable(request, list(queryset[:ACTION_LIMIT]))

    def disable_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The schedule page's "Disable" button: the reason form, then the disable."""
        if not self.has_operate_permission(request):
            raise PermissionDenied
        row = get_object_or_404(Schedule, pk=object_id)
        return ask_reason_on_page(
            self,
            request,
            row,
            title=f"Disable schedule {row.name}",
            intro="No new occurrence is planned until it is enabled again; an occurrence "
            "already claimed by a worker finishes.",
            apply=lambda reason: self._disable(request, [row], reason),
        )

    def enable_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The schedule page's "Enable" button (POST only: it changes the switch)."""
        if not self.has_operate_permission(request):
            raise PermissionDenied
        row = get_object_or_404(Schedule, pk=object_id)
        if request.method == "POST":
            self._enable(request, [row])
        return HttpResponseRedirect(
            reverse(f"{self.admin_site.name}:litejobs_schedule_change", args=[row.pk])
        )


class OccurrenceReplays(OperatedPages):
    """Replay occurrences: the list's action and the occurrence page's button."""

    def get_urls(self) -> list[URLPattern]:
        """A per-occurrence replay page (the button on the occurrence's page)."""
        return [
            self.page_url("<path:object_id>/replay/", self.replay_view, "replay"),
            *super().get_urls(),
        ]

    def _replay(self, request: HttpRequest, occurrences: list[Occurrence], reason: str) -> None:
        def replay(occurrence_id: int, by: str) -> operations.ReplayOutcome:
            return operations.replay(occurrence_id, reason=reason, by=by, user_id=request.user.pk)

        report(self, request, replay, [occurrence.pk for occurrence in occurrences])

    @admin.action(description="Replay selected occurrences (asks why)", permissions=["operate"])
    def replay_occurrences(
        self, request: HttpRequest, queryset: QuerySet[Any]
    ) -> HttpResponse | None:
        """Ask for a reason, then ``operations.replay`` each selected occurrence."""
        rows = list(queryset.select_related("schedule")[:ACTION_LIMIT])
        return ask_reason(
            self,
            request,
            rows,
            title="Replay occurrences",
            intro="Each runs again as a new attempt under its own identity (same schedule and "
            "instant), recorded with your name, the time and this reason.",
            hidden=selected_hidden("replay_occurrences", rows),
            apply=lambda reason: self._replay(request, rows, reason),
        )

    def replay_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The occurrence page's "Replay" button: the reason form, then the replay."""
        if not self.has_operate_permission(request):
            raise PermissionDenied
        occurrence = get_object_or_404(Occurrence.objects.select_related("schedule"), pk=object_id)
        return ask_reason_on_page(
            self,
            request,
            occurrence,
            title=f"Replay occurrence {occurrence.pk}",
            intro="It runs again as a new attempt under its own identity (same schedule and "
            "instant), recorded with your name, the time and this reason.",
            apply=lambda reason: self._replay(request, [occurrence], reason),
        )
