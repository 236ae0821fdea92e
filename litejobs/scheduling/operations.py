"""The operator's verbs on schedules: inspect, replay, disable / enable (and each schedule's
runbook, the commands an operator runs for it).

The admin and ``manage.py litejobs`` call these functions and nothing else, so neither writes
the store behind the occurrence identity's back: a replay is a new job under the same
occurrence identity (key ``occurrence:<schedule>:<instant>``) with an audit record, a disable
is a switch the leader reads in the same transaction it plans in. Every change logs who asked
to this module's logger and writes its operator action log row in its own transaction.
Whether a schedule is overdue is ``health``'s; purging old occurrences is ``retention``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.db import connections, transaction
from django.db.models import Count

from ..conf import settings
from ..core import clock
from ..core.clock import iso
from ..core.durations import format_duration
from ..core.enums import OperatorVerb
from ..exceptions import InvalidInput, OccurrenceNotFound, ScheduleNotFound, TransitionRefused
from ..jobs import operations as job_operations
from ..jobs.actionlog import Actor, record
from ..models import (
    LIVE,
    OCCURRENCE_FINISHED,
    Job,
    Occurrence,
    OccurrenceReplay,
    OccurrenceState,
    Schedule,
)
from ..sql.cursors import fetch_all, run_query
from . import declarations, runs
from .health import health, leader

logger = logging.getLogger(__name__)

#: Recent occurrences ``schedule show`` and the admin page list.
RECENT_OCCURRENCES = 10


def _alias() -> str:
    return settings.DATABASE


def _check_reason(reason: Any, what: str) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInput(
            f"Say why: {what} needs a reason (--reason in the CLI, the reason field in the "
            "admin); it is recorded so the next operator knows.",
            code="reason-required",
        )
    return reason.strip()[:1000]


def get_schedule(name: str) -> Schedule:
    """The schedule row named ``name``; ``ScheduleNotFound`` when there is none."""
    row = Schedule.objects.using(_alias()).filter(name=name).first()
    if row is None:
        known = declarations.get(name) is not None
        raise ScheduleNotFound(
            f"No schedule named {name!r} is in the database"
            + (
                " yet: start `manage.py runscheduler`, which syncs the declarations."
                if known
                else "; list them with `manage.py litejobs schedule list` or the admin."
            )
        )
    return row


def _no_occurrence(occurrence_id: int) -> OccurrenceNotFound:
    return OccurrenceNotFound(
        f"No occurrence has id {occurrence_id}. It was never planned or was purged after "
        "its schedule's retention; see `manage.py litejobs schedule show NAME`."
    )


# Reading a schedule ------------------------------------------------------------------------


def describe_timetable(row: Schedule) -> str:
    """``cron '0 2 * * *' (UTC)``, ``every 1h30m (UTC)`` or with the local DST rules."""
    if row.every is not None:
        return f"every {format_duration(row.every)} (UTC)"
    if row.timezone in ("UTC", "Etc/UTC"):
        return f"cron '{row.cron}' (UTC)"
    return (
        f"cron '{row.cron}' ({row.timezone}; skipped hour: {row.dst_skipped}, repeated hour: "
        f"{row.dst_repeated})"
    )


def runbook(name: str) -> list[tuple[str, str]]:
    """The commands that operate a schedule, as (what, command) pairs (shown by the admin)."""
    return [
        ("Inspect", f"manage.py litejobs schedule show {name}"),
        ("Replay an occurrence", 'manage.py litejobs replay OCCURRENCE_ID --reason "..."'),
        ("Disable", f'manage.py litejobs disable {name} --reason "..."'),
        ("Enable", f"manage.py litejobs enable {name}"),
        ("Find overdue schedules", "manage.py litejobs doctor"),
    ]


def occurrence_data(occurrence: Occurrence) -> dict[str, Any]:
    """One occurrence as plain JSON values (errors are safe: scrubbed by the worker)."""
    return {
        "id": occurrence.pk,
        "schedule": occurrence.schedule.name,
        "scheduled_for": iso(occurrence.scheduled_for),
        "run_at": iso(occurrence.run_at),
        "state": occurrence.state,
        "attempts": occurrence.attempts,
        "replays": occurrence.replays,
        "job_id": occurrence.last_job_id,
        "last_scheduled_at": iso(occurrence.last_scheduled_at),
        "started_at": iso(occurrence.started_at),
        "completed_at": iso(occurrence.completed_at),
        "finished_at": iso(occurrence.finished_at),
        "lease_owner": occurrence.lease_owner,
        "lease_expires_at": iso(occurrence.lease_expires_at),
        "fence": occurrence.fence,
        "tenant": occurrence.tenant,
        "error_class": occurrence.error_class,
        "error_message": occurrence.error_message,
        "note": occurrence.note,
    }


def schedule_details(name: str, now: datetime | None = None) -> dict[str, Any]:
    """Everything about a schedule: declaration, operator switch, health, recent occurrences."""
    now = now or clock.now()
    row = get_schedule(name)
    state = health(row, now)
    counts = dict(
        Occurrence.objects.using(_alias())
        .filter(schedule=row)
        .order_by()
        .values_list("state")
        .annotate(n=Count("pk"))
    )
    recent = (
        Occurrence.objects.using(_alias())
        .filter(schedule=row)
        .select_related("schedule")
        .order_by("-scheduled_for")[:RECENT_OCCURRENCES]
    )
    lease = leader()
    return {
        "name": row.name,
        "job": row.job_name,
        "args": row.args,
        "timetable": describe_timetable(row),
        "cron": row.cron or None,
        "every_seconds": row.every.total_seconds() if row.every is not None else None,
        "timezone": row.timezone,
        "local_time_reason": row.local_time_reason,
        "dst_skipped": row.dst_skipped or None,
        "dst_repeated": row.dst_repeated or None,
        "jitter_seconds": row.jitter.total_seconds(),
        "overlap": row.overlap,
        "misfire": row.misfire,
        "max_catchup": row.max_catchup,
        "retry": row.retry,
        "timeout_seconds": row.timeout.total_seconds(),
        "grace_seconds": row.grace.total_seconds(),
        "retention_seconds": row.retention.total_seconds(),
        "idempotency": f"occurrence:{row.name}:<scheduled instant, UTC ISO 8601>",
        "operating_owner": row.operating_owner,
        "record_owner": row.record_owner,
        "status": row.status,
        "decider": row.decider,
        "decide_by": row.decide_by.isoformat() if row.decide_by else None,
        "declared": row.declared,
        "enabled": row.enabled,
        "state_reason": row.state_reason,
        "state_changed_by": row.state_changed_by,
        "state_changed_at": iso(row.state_changed_at),
        "active_since": iso(row.active_since),
        "planned_through": iso(row.planned_through),
        "last_success_at": iso(row.last_success_at),
        "last_success_for": iso(row.last_success_for),
        "overdue": state.overdue,
        "overdue_expected": iso(state.expected) if state.overdue else None,
        "next_runs": [iso(t) for t in state.next_runs],
        "occurrence_counts": counts,
        "recent_occurrences": [occurrence_data(o) for o in recent],
        "leader": (
            {
                "host": lease.host,
                "pid": lease.pid,
                "expires_at": iso(lease.expires_at),
                "live": lease.expires_at >= clock.database_now(_alias()),
            }
            if lease
            else None
        ),
        "runbook": [{"what": what, "command": command} for what, command in runbook(row.name)],
    }


# Runbook verbs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayOutcome:
    """A manual replay: the occurrence, the new job under its identity, the audit record."""

    occurrence_id: int
    schedule: str
    scheduled_for: datetime
    job_id: int
    replay_id: int
    message: str

    def as_dict(self) -> dict[str, Any]:
        """The outcome as plain JSON values."""
        return {**asdict(self), "scheduled_for": iso(self.scheduled_for)}


def replay(
    occurrence_id: int, *, reason: str, by: str, user_id: int | None = None
) -> ReplayOutcome:
    """Run an occurrence again: a new attempt under the same identity, audited.

    The occurrence keeps its scheduled instant; a new job with its key (and the schedule's
    arguments, retry, timeout and overlap) is enqueued now, and an ``OccurrenceReplay`` row
    and an operator action log row record who asked, when and why — all in one transaction.
    Refused (``replay-refused``) while a job of the occurrence is still live (scheduled,
    running or awaiting a retry): running both would do the same work twice.
    """
    by = job_operations.check_by(by)
    reason = _check_reason(reason, "a replay")
    now = clock.now()
    alias = _alias()
    with transaction.atomic(using=alias):
        occurrence = (
            Occurrence.objects.using(alias)
            .select_for_update(of=("self",))
            .select_related("schedule")
            .filter(pk=occurrence_id)
            .first()
        )
        if occurrence is None:
            raise _no_occurrence(occurrence_id)
        schedule = occurrence.schedule
        definition = declarations.get(schedule.name)
        if definition is None:
            raise TransitionRefused(
                f"Schedule {schedule.name!r} is not declared by the running code, so its job "
                "and arguments are unknown here; restore its declaration (schedules.py) to "
                "replay its occurrences.",
                code="replay-refused",
            )
        live = (
            Job.objects.using(alias)
            .filter(occurrence_id=occurrence.pk, state__in=LIVE)
            .values_list("pk", "state")
            .first()
        )
        if live is not None or occurrence.state not in OCCURRENCE_FINISHED:
            held_by = f"job {live[0]} ({live[1]})" if live else f"its job {occurrence.last_job_id}"
            logger.info(
                "occurrence replay refused id=%s state=%s by=%s",
                occurrence.pk,
                occurrence.state,
                by,
            )
            raise TransitionRefused(
                f"Occurrence {occurrence.pk} is {occurrence.state}: {held_by} still runs it. "
                f"Wait for it to finish (or cancel it with `manage.py litejobs cancel "
                f"{live[0] if live else occurrence.last_job_id}`), then replay.",
                code="replay-refused",
            )
        row = runs.prepare(definition, occurrence.scheduled_for)
        enqueued = runs.enqueue(definition, row, occurrence_id=occurrence.pk, now=now, run_at=now)
        audit = OccurrenceReplay.objects.using(alias).create(
            occurrence=occurrence,
            requested_by=by,
            requested_at=now,
            reason=reason,
            job_id=enqueued.id,
            previous_state=occurrence.state,
        )
        Occurrence.objects.using(alias).filter(pk=occurrence.pk).update(
            state=OccurrenceState.SCHEDULED,
            last_job_id=enqueued.id,
            last_scheduled_at=now,
            run_at=now,
            replays=occurrence.replays + 1,
            finished_at=None,
            lease_expires_at=None,
            note=f"Replayed by {by}: {reason}"[:1000],
        )
        record(
            OperatorVerb.SCHEDULE_REPLAY,
            Actor(by, user_id, reason),
            affected=1,
            job_ids=[enqueued.id],
            filter={"schedule": schedule.name, "occurrence": occurrence.pk},
        )
    logger.info(
        "occurrence replayed id=%s schedule=%s instant=%s job=%s by=%s reason=%r",
        occurrence.pk,
        schedule.name,
        occurrence.scheduled_for.isoformat(),
        enqueued.id,
        by,
        reason,
    )
    return ReplayOutcome(
        occurrence.pk,
        schedule.name,
        occurrence.scheduled_for,
        enqueued.id,
        audit.pk,
        f"Occurrence {occurrence.pk} of {schedule.name!r} at "
        f"{occurrence.scheduled_for.isoformat()} is replayed as job {enqueued.id} (audit record "
        f"{audit.pk}).",
    )


@dataclass(frozen=True)
class SwitchOutcome:
    """A disable or enable: the schedule's switch as it now stands."""

    schedule: str
    enabled: bool
    reason: str
    changed_by: str
    changed_at: datetime
    skipped: int
    message: str

    def as_dict(self) -> dict[str, Any]:
        """The outcome as plain JSON values (``skipped`` named for what it counts)."""
        plain = {**asdict(self), "changed_at": iso(self.changed_at)}
        plain["skipped_occurrences"] = plain.pop("skipped")
        return plain


def disable(name: str, *, reason: str, by: str, user_id: int | None = None) -> SwitchOutcome:
    """Stop a schedule: the leader plans no new occurrence until ``enable``.

    Occurrences planned ahead whose job has not started are skipped (their jobs cancelled);
    an occurrence already claimed by a worker finishes, and so do its retries. A sync never
    re-enables it. The reason is required and shown in the admin, ``schedule show`` and
    ``doctor``; the operator action log row names the skipped occurrences.
    """
    by = job_operations.check_by(by)
    reason = _check_reason(reason, f"disabling schedule {name!r}")
    now = clock.now()
    alias = _alias()
    with transaction.atomic(using=alias):
        row = get_schedule(name)
        # Locks the row: a plan in flight finishes first, and its occurrences are skipped below.
        Schedule.objects.using(alias).filter(pk=row.pk).update(
            enabled=False, state_reason=reason, state_changed_by=by, state_changed_at=now
        )
        with connections[alias].cursor() as cursor:
            run_query(cursor, "schedule_cancel_unstarted", {"schedule_id": row.pk, "now": now})
            skipped = [r["occurrence_id"] for r in fetch_all(cursor)]
        if skipped:
            Occurrence.objects.using(alias).filter(pk__in=skipped).update(
                note=f"Skipped: schedule disabled by {by}: {reason}"[:1000]
            )
        record(
            OperatorVerb.SCHEDULE_DISABLE,
            Actor(by, user_id, reason),
            affected=1,
            filter={"schedule": name, "skipped_occurrences": skipped},
            change={"enabled": (row.enabled, False)},
        )
    logger.info(
        "schedule disabled schedule=%s by=%s reason=%r skipped=%s", name, by, reason, len(skipped)
    )
    return SwitchOutcome(
        name,
        False,
        reason,
        by,
        now,
        len(skipped),
        f"Schedule {name!r} is disabled: no new occurrence is planned until it is enabled "
        f"again. {_occurrences(len(skipped))} not yet started "
        f"{'was' if len(skipped) == 1 else 'were'} skipped; one already claimed by a worker "
        "finishes.",
    )


def _occurrences(count: int) -> str:
    return f"{count} planned occurrence{'' if count == 1 else 's'}"


def enable(name: str, *, by: str, reason: str = "", user_id: int | None = None) -> SwitchOutcome:
    """Let the leader plan a disabled schedule again, from now on (``reason`` is logged, and
    recorded in the operator action log; enabling an enabled schedule writes nothing).

    Instants that passed while it was disabled are not caught up (disabling meant they should
    not run); replay one with ``replay`` if it should.
    """
    by = job_operations.check_by(by)
    now = clock.now()
    alias = _alias()
    with transaction.atomic(using=alias):
        row = get_schedule(name)
        if row.enabled:
            return SwitchOutcome(
                name,
                True,
                "",
                row.state_changed_by,
                row.state_changed_at or row.active_since,
                0,
                f"Schedule {name!r} is already enabled.",
            )
        Schedule.objects.using(alias).filter(pk=row.pk).update(
            enabled=True,
            state_reason="",
            state_changed_by=by,
            state_changed_at=now,
            active_since=now,
        )
        record(
            OperatorVerb.SCHEDULE_ENABLE,
            Actor(by, user_id, reason),
            affected=1,
            filter={"schedule": name},
            change={"enabled": (False, True)},
        )
    logger.info("schedule enabled schedule=%s by=%s reason=%r", name, by, reason)
    return SwitchOutcome(
        name,
        True,
        "",
        by,
        now,
        0,
        f"Schedule {name!r} is enabled: the leader plans its occurrences from now on (the "
        "instants it missed while disabled are not run).",
    )


def _refuse_job_retry(job_id: int, row: Mapping[str, Any], by: str) -> TransitionRefused | None:
    """An occurrence runs again only by a replay, which keeps its identity and is audited."""
    occurrence_id = row["occurrence_id"]
    if (
        occurrence_id is None
        or not Occurrence.objects.using(_alias()).filter(pk=occurrence_id).exists()
    ):
        return None
    logger.info("job retry refused id=%s reason=occurrence by=%s", job_id, by)
    return TransitionRefused(
        f"Job {job_id} runs occurrence {occurrence_id} of a schedule; run it again with "
        f'`manage.py litejobs replay {occurrence_id} --reason "..."` (or the occurrence\'s '
        "replay action in the admin), which keeps the occurrence identity and records who "
        "replayed it and why.",
        code="retry-refused",
    )


job_operations.retry_guards.register("occurrence", _refuse_job_retry)
