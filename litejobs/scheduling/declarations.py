"""``schedule(...)``: the declaration of a schedule, validated at import, kept apart from its job.

Each app's ``schedules.py`` (autodiscovered after every ``jobs.py``) declares its schedules.
A declaration names everything the scheduled-jobs record needs: the timetable (``cron=`` or
``every=``), the time zone (UTC unless a business-local reason is given, with DST behaviour),
the delay (``jitter``), ``overlap``, ``misfire`` (with ``max_catchup``), retry and timeout
(the job's unless given), owners, status and retention. The idempotency scope is always the
occurrence identity. Anything invalid raises ``DeclarationError`` with code
``schedule-invalid`` naming the fix (the checks, in named groups, are ``options``').

The timeout is independent of ``LITEJOBS["LEASE"]``: a run's lease is renewed while it lives,
and a worker that cannot renew it cancels the run before the lease can lapse (the fence then
refuses its late completion), so a 30-minute nightly job needs no 30-minute lease.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from datetime import date, timedelta
from functools import cached_property
from typing import Any

from ..core.enums import Misfire, Overlap, ScheduleStatus
from ..core.registry import Registry
from ..core.retry import Retry
from ..exceptions import DeclarationError
from ..jobs import catalog
from ..jobs.catalog import Definition, Run
from ..jobs.claims import ClaimedJob
from ..jobs.declarations import JobDefinition
from . import options
from .identity import OccurrenceRef
from .timetable import Timetable

#: Added to jitter and timeout for the default ``grace`` before a schedule is overdue.
DEFAULT_GRACE_MARGIN = timedelta(minutes=5)


def _named_twice(
    name: str, existing: ScheduleDefinition, new: ScheduleDefinition
) -> DeclarationError:
    return options.invalid(
        name, f"two schedules have this name ({existing.module} and {new.module}); rename one."
    )


_schedules: Registry[ScheduleDefinition] = Registry("schedule", duplicate=_named_twice)


@dataclass(frozen=True, eq=False)
class ScheduleDefinition:
    """A validated schedule. Created by ``litejobs.schedule(...)``; see its docstring."""

    name: str
    job: JobDefinition
    timetable: Timetable
    jitter: timedelta
    overlap: Overlap
    misfire: Misfire
    max_catchup: int
    retry: Retry
    timeout: timedelta
    grace: timedelta
    retention: timedelta
    operating_owner: str
    record_owner: str
    status: ScheduleStatus
    decider: str
    decide_by: date | None
    local_time_reason: str
    args: dict[str, Any]
    module: str = ""

    @cached_property
    def run_definition(self) -> JobDefinition:
        """The job as occurrences run it: the schedule's retry, timeout and overlap applied."""
        run = copy.copy(self.job)
        run.retry = self.retry
        run.timeout = self.timeout
        run.dead_letter = True  # a failed occurrence stays visible (dead_letter), never dropped
        if self.overlap == Overlap.FORBID:
            run.concurrency = 1  # the limit; the key is the schedule's (see concurrency_key)
        return run

    def __repr__(self) -> str:
        return f"<schedule {self.name}>"

    @property
    def concurrency_key(self) -> str | None:
        """The fleet-wide concurrency key occurrence jobs carry under ``overlap="forbid"``."""
        return f"schedule:{self.name}" if self.overlap == Overlap.FORBID else None

    def snapshot(self) -> dict[str, Any]:
        """The declaration as ``Schedule`` columns (what a sync writes; never operator state)."""
        timetable = self.timetable
        retry = self.retry
        return {
            "job_name": self.job.name,
            "args": self.args,
            "cron": timetable.cron or "",
            "every": timetable.every,
            "timezone": timetable.zone,
            "local_time_reason": self.local_time_reason,
            "dst_skipped": timetable.dst_skipped or "",
            "dst_repeated": timetable.dst_repeated or "",
            "jitter": self.jitter,
            "overlap": self.overlap,
            "misfire": self.misfire,
            "max_catchup": self.max_catchup,
            "retry": {
                "attempts": retry.attempts,
                "backoff": retry.backoff,
                "base": retry.base.total_seconds(),
                "max": retry.max.total_seconds(),
                "jitter": retry.jitter,
            },
            "timeout": self.timeout,
            "grace": self.grace,
            "retention": self.retention,
            "operating_owner": self.operating_owner,
            "record_owner": self.record_owner,
            "status": self.status,
            "decider": self.decider,
            "decide_by": self.decide_by,
        }


def schedule(
    name: str,
    *,
    job: JobDefinition,
    cron: str | None = None,
    every: timedelta | str | float | None = None,
    timezone: str = "UTC",
    local_time_reason: str | None = None,
    dst_skipped: str | None = None,
    dst_repeated: str | None = None,
    jitter: timedelta | str | float = 0,
    overlap: str = "forbid",
    misfire: str | None = None,
    max_catchup: int = 10,
    retry: Retry | dict[str, Any] | int | None = None,
    timeout: timedelta | str | float | None = None,
    operating_owner: str | None = None,
    record_owner: str | None = None,
    status: str = "active",
    decider: str | None = None,
    decide_by: date | str | None = None,
    retention: timedelta | str | float = "90d",
    grace: timedelta | str | float | None = None,
    args: dict[str, Any] | None = None,
) -> ScheduleDefinition:
    """Declare a schedule that runs ``job`` with ``args`` on a timetable; see README "Schedules".

    Required: ``name``, ``job``, ``cron=`` or ``every=``, ``misfire=`` (``skip`` | ``run_once``
    | ``run_all``), ``operating_owner=`` and ``record_owner=``. A ``timezone`` other than UTC
    also needs ``local_time_reason``, ``dst_skipped`` and ``dst_repeated``; a ``draft`` needs
    ``decider`` and ``decide_by``. The timeout (the job's unless given) bounds each run; it
    may exceed ``LITEJOBS["LEASE"]``, which the worker renews while the run is alive.
    """
    options.check_identity(name, job)
    timetable = options.timetable(
        name, cron, every, timezone, local_time_reason, dst_skipped, dst_repeated
    )
    options.check_fires(name, cron, timetable)
    misfire_policy, overlap_policy = options.policies(name, misfire, overlap, max_catchup)
    operating, recording = options.owners(name, operating_owner, record_owner)
    state, decided_by, deadline = options.status(name, status, decider, decide_by)
    jitter_delay = options.jitter(name, jitter, timetable)
    policy, run_timeout = options.run_limits(name, job, retry, timeout)
    kept = options.duration(name, "retention", retention, allow_zero=False)
    late = (
        options.duration(name, "grace", grace, allow_zero=True)
        if grace is not None
        else jitter_delay + run_timeout + DEFAULT_GRACE_MARGIN
    )
    arguments = options.arguments(name, job, args)
    definition = ScheduleDefinition(
        name=name,
        job=job,
        timetable=timetable,
        jitter=jitter_delay,
        overlap=overlap_policy,
        misfire=misfire_policy,
        max_catchup=max_catchup,
        retry=policy,
        timeout=run_timeout,
        grace=late,
        retention=kept,
        operating_owner=operating,
        record_owner=recording,
        status=state,
        decider=decided_by,
        decide_by=deadline,
        local_time_reason=(local_time_reason or "").strip(),
        args=arguments,
        module=_caller_module(),
    )
    register(definition)
    return definition


def _caller_module() -> str:
    frame = sys._getframe(2)  # schedule() -> its caller
    return str(frame.f_globals.get("__name__", ""))


# The registry of schedules known to this process ---------------------------------------------


def register(definition: ScheduleDefinition) -> None:
    """Add a schedule; two may not share a name (a module imported again replaces its own)."""
    _schedules.register(definition.name, definition)


def get(name: str) -> ScheduleDefinition | None:
    """The declaration of ``name`` in this process, if any."""
    return _schedules.get(name)


def all_schedules() -> list[ScheduleDefinition]:
    """Every declared schedule, by name."""
    return _schedules.all()


def unregister(name: str) -> None:
    """Forget a schedule (tests that declare schedules on the fly)."""
    _schedules.unregister(name)


def run_of_occurrence(job: ClaimedJob, definition: Definition) -> Run | None:
    """How a claimed job that runs a scheduled occurrence runs: its body sees the occurrence
    (``ctx.occurrence``), and an occurrence of a declared schedule runs with the schedule's
    retry and timeout (``run_definition``). ``None`` for other jobs."""
    if job.occurrence_id is None:
        return None
    occurrence = OccurrenceRef.from_key(job.occurrence_id, job.key)
    declared = _schedules.get(occurrence.schedule)
    if declared is not None and declared.job.name == job.name:
        definition = declared.run_definition
    return Run(definition, occurrence)


catalog.overrides.register("schedule", run_of_occurrence)
