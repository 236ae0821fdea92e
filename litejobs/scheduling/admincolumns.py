"""How a schedule shows in the admin: its columns and its page's fields (the timetable in
words, the switch, the next runs in the site's zone and its own, overdue, the scheduler leader,
the runbook commands), as a mixin of the schedules' admin."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast
from urllib.parse import urlencode

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from ..admin.base import ReadOnlyAdmin, duration_display, once_per
from ..conf import settings
from ..core import clock, times
from ..core.retry import Retry
from ..models import Schedule
from . import health, operations


def _health(row: Schedule) -> health.Health:
    """The schedule's health, computed once per row and request."""
    return once_per(row, "_litejobs_health", lambda: health.health(row, clock.now()))


#: The schedule's durations, each shown as people write it (``2s``, ``90d``).
_DURATIONS = ("jitter", "timeout", "grace", "retention")


class ScheduleColumns(ReadOnlyAdmin):
    """The schedules' columns and their page's fields, each an ``@admin.display``."""

    jitter_shown = duration_display(Schedule, "jitter")
    timeout_shown = duration_display(Schedule, "timeout")
    grace_shown = duration_display(Schedule, "grace")
    retention_shown = duration_display(Schedule, "retention")

    @admin.display(description="retry")
    def retry_policy(self, obj: Schedule) -> str:
        """The retry policy in words: "5 attempts, exponential backoff from 2s to 10m"."""
        return Retry.coerce(obj.retry).describe()

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        """The help texts of the fields shown in words (``retry_policy``, ``*_shown``)."""
        shown = {"retry_policy": "retry", **{f"{n}_shown": n for n in _DURATIONS}}
        kwargs["help_texts"] = {
            column: getattr(Schedule._meta.get_field(field), "help_text", "")
            for column, field in shown.items()
        }
        return super().get_form(request, obj, change, **kwargs)

    @admin.display(description="timetable")
    def timetable(self, obj: Schedule) -> str:
        """The cron or interval, with the zone and its DST behaviour."""
        return operations.describe_timetable(obj)

    @admin.display(description="switch")
    def switch(self, obj: Schedule) -> str:
        """``active``, ``draft``, ``retired``, or ``disabled`` (by whom)."""
        if not obj.enabled:
            return f"disabled by {obj.state_changed_by or '?'}"
        return obj.status

    @admin.display(description="next runs")
    def next_run(self, obj: Schedule) -> str:
        """The next five instants it fires (none while disabled, draft or retired)."""
        runs = _health(obj).next_runs
        if not runs:
            return "-"
        return format_html_join(mark_safe("<br>"), "{}", ((times.when(t),) for t in runs))

    @admin.display(description="next five runs")
    def next_runs(self, obj: Schedule) -> str:
        """The next five instants, in the site's time zone and in the schedule's own."""
        runs = _health(obj).next_runs
        if not runs:
            return "- (not planned: disabled, draft, retired or not declared)"
        zone = health.timetable_of(obj).tzinfo
        return format_html(
            "<ol>{}</ol>",
            format_html_join(
                "",
                "<li>{} ({})</li>",
                ((times.when(t), times.when(t, zone=zone)) for t in runs),
            ),
        )

    @admin.display(description="overdue")
    def overdue_flag(self, obj: Schedule) -> str:
        """OVERDUE (red) when no occurrence completed within its period plus grace."""
        state = _health(obj)
        if not state.overdue:
            return "no"
        return format_html(
            '<strong class="litejobs-alert">OVERDUE</strong> (no success since {})',
            times.when(cast(datetime, state.expected)),  # overdue: an instant was expected
        )

    @admin.display(description="occurrences")
    def occurrences_link(self, obj: Schedule) -> str:
        """A link to its occurrences."""
        url = reverse(f"{self.admin_site.name}:litejobs_occurrence_changelist")
        return format_html(
            '<a href="{}?{}">occurrences</a>', url, urlencode({"schedule__id__exact": obj.pk})
        )

    @admin.display(description="idempotency")
    def idempotency(self, obj: Schedule) -> str:
        """Always the occurrence identity."""
        return f"occurrence:{obj.name}:<scheduled instant, UTC>"

    @admin.display(description="scheduler leader")
    def leader(self, obj: Schedule) -> str:
        """The replica that plans right now (the leader lease)."""
        lease = health.leader()
        if lease is None:
            return "none yet: start manage.py runscheduler"
        lapsed = lease.expires_at < clock.database_now(settings.DATABASE)
        return f"{lease.host} pid {lease.pid}, lease until {times.when(lease.expires_at)}" + (
            " (LAPSED: no scheduler is running)" if lapsed else ""
        )

    @admin.display(description="runbook")
    def runbook(self, obj: Schedule) -> str:
        """The commands that inspect, replay, disable and enable it (also the page's buttons)."""
        return format_html(
            "<table>{}</table><p>Disabling stops new occurrences; an occurrence already claimed "
            "by a worker finishes. A replay is a new attempt of the same occurrence, recorded "
            "with who, when and why.</p>",
            format_html_join(
                "",
                "<tr><th>{}</th><td><code>{}</code></td></tr>",
                operations.runbook(obj.name),
            ),
        )
