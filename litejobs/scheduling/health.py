"""Whether schedules run as declared: each one's health (overdue, next run times), the
scheduler's leader, and what ``doctor`` reports about schedules (overdue ones, no leader,
disabled ones, drafts past their decide-by date).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ..conf import settings
from ..core import clock
from ..core.clock import iso
from ..core.diagnostics import Problem, note
from ..models import LeaderLease, LeaderRole, Schedule, ScheduleStatus
from .timetable import Timetable

#: Next run times shown per schedule.
NEXT_RUNS = 5


def timetable_of(row: Schedule) -> Timetable:
    """The timetable a schedule row's declaration snapshot describes."""
    if row.every is not None:
        return Timetable(every=row.every)
    return Timetable(
        cron=row.cron,
        zone=row.timezone,
        dst_skipped=row.dst_skipped or None,
        dst_repeated=row.dst_repeated or None,
    )


@dataclass(frozen=True)
class Health:
    """Whether a schedule is overdue: no success since an instant due ``grace`` ago."""

    overdue: bool
    expected: datetime | None  # the latest instant that should have completed by now
    next_runs: list[datetime] = field(default_factory=list)

    @property
    def planned(self) -> bool:
        """Whether the leader plans it at all (enabled, active and declared)."""
        return bool(self.next_runs)


def health(row: Schedule, now: datetime | None = None) -> Health:
    """Overdue and the next run times of one schedule, from its row alone.

    Overdue when it is enabled, active and declared, and the latest instant at or before
    ``now - grace`` (after it became active) has no successful completion at or after it —
    that is, no occurrence completed within its period plus the grace.
    """
    now = now or clock.now()
    timetable = timetable_of(row)
    planned = row.enabled and row.status == ScheduleStatus.ACTIVE and row.declared
    next_runs = timetable.next_times(now, NEXT_RUNS) if planned else []
    if not planned:
        return Health(False, None, next_runs)
    expected = timetable.latest_at_or_before(now - row.grace)
    if expected is None or expected <= row.active_since:  # planning starts after it
        return Health(False, None, next_runs)
    overdue = row.last_success_at is None or row.last_success_at < expected
    return Health(overdue, expected, next_runs)


def leader() -> LeaderLease | None:
    """The scheduler's leader lease row, if any scheduler ever led."""
    return LeaderLease.of(LeaderRole.SCHEDULER, settings.DATABASE)


@dataclass(frozen=True)
class ScheduleHealth:
    """A schedule row with its health, for the admin list, ``doctor`` and metrics."""

    row: Schedule
    health: Health


def all_health(now: datetime | None = None) -> list[ScheduleHealth]:
    """Every schedule row with its health (one query; the maths runs per row)."""
    now = now or clock.now()
    rows = Schedule.objects.using(settings.DATABASE)
    return [ScheduleHealth(row, health(row, now)) for row in rows]


def problems(now: datetime | None = None) -> list[Problem]:
    """What ``doctor`` reports about schedules: ``overdue-schedule`` (no success within period
    plus grace) and ``no-scheduler`` (active schedules but no live leader lease); notes for
    disabled schedules with their reason and drafts past their decide-by date."""
    now = now or clock.now()
    found: list[Problem] = []
    states = all_health(now)
    overdue = [s for s in states if s.health.overdue]
    if overdue:
        names = ", ".join(
            f"{s.row.name} (last success {iso(s.row.last_success_at) or 'never'}, expected one "
            f"for {iso(s.health.expected)})"
            for s in overdue
        )
        found.append(
            Problem(
                "overdue-schedule",
                f"{len(overdue)} schedule(s) have no successful occurrence within "
                f"their period plus grace: {names}. Check that `manage.py runscheduler` and a "
                "worker run, then `manage.py litejobs schedule show NAME` for failed "
                "occurrences.",
                count=len(overdue),
                schedules=tuple(s.row.name for s in overdue),
            )
        )
    active = [
        s.row.name
        for s in states
        if s.row.enabled and s.row.status == ScheduleStatus.ACTIVE and s.row.declared
    ]
    lease = leader()
    if active and (lease is None or lease.expires_at < clock.database_now(settings.DATABASE)):
        since = f"since {iso(lease.expires_at)}" if lease else "ever"
        found.append(
            Problem(
                "no-scheduler",
                f"{len(active)} active schedule(s) but no scheduler holds the leader "
                f"lease ({since}): nothing plans their occurrences. Start `manage.py "
                "runscheduler` (two or more replicas for failover).",
                count=len(active),
                schedules=tuple(active),
            )
        )
    for s in states:
        row = s.row
        if not row.enabled:
            found.append(
                note(
                    "schedule-disabled",
                    f"Schedule {row.name!r} is disabled since {iso(row.state_changed_at)} by "
                    f"{row.state_changed_by or 'unknown'} "
                    f"({row.state_reason or 'no reason given'});"
                    f" enable it with `manage.py litejobs enable {row.name}`.",
                    schedules=(row.name,),
                )
            )
        if row.status == ScheduleStatus.DRAFT and row.decide_by and row.decide_by < now.date():
            found.append(
                note(
                    "schedule-draft-overdue",
                    f"Schedule {row.name!r} is still a draft past its decide-by date "
                    f"{row.decide_by.isoformat()} ({row.decider} decides).",
                    schedules=(row.name,),
                )
            )
    return found
