"""``schedule(...)``: the declaration of a schedule, validated at import, kept apart from its job.

Each app's ``schedules.py`` (autodiscovered after every ``jobs.py``) declares its schedules.
A declaration names everything the scheduled-jobs record needs: the timetable (``cron=`` or
``every=``), the time zone (UTC unless a business-local reason is given, with DST behaviour),
the delay (``jitter``), ``overlap``, ``misfire`` (with ``max_catchup``), retry and timeout
(the job's unless given), owners, status and retention. The idempotency scope is always the
occurrence identity. Anything invalid raises ``DeclarationError`` with code
``schedule-invalid`` naming the fix.

The timeout is independent of ``LITEJOBS["LEASE"]``: a run's lease is renewed while it lives,
and a worker that cannot renew it cancels the run before the lease can lapse (the fence then
refuses its late completion), so a 30-minute nightly job needs no 30-minute lease.
"""

from __future__ import annotations

import copy
import re
import sys
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import cached_property
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from ..core.durations import format_duration, parse_duration
from ..core.enums import Misfire, Overlap, ScheduleStatus, values_of
from ..core.payloads import dumps
from ..core.registry import Registry
from ..core.retry import Retry
from ..exceptions import DeclarationError, InvalidInput
from ..jobs import catalog
from ..jobs.catalog import Definition, Run
from ..jobs.claims import ClaimedJob
from ..jobs.declarations import JobDefinition
from .identity import OccurrenceRef
from .timetable import DST_REPEATED, DST_SKIPPED, UTC_ZONES, Timetable

MISFIRE_POLICIES = values_of(Misfire)
OVERLAP_POLICIES = values_of(Overlap)
STATUSES = tuple(ScheduleStatus.values)
#: Letters, digits and ``_.-``; no colon (the occurrence key is ``occurrence:<name>:<instant>``).
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
MAX_CATCHUP_LIMIT = 1000
#: Added to jitter and timeout for the default ``grace`` before a schedule is overdue.
DEFAULT_GRACE_MARGIN = timedelta(minutes=5)
#: A fixed instant to examine a cron expression from (declarations never read the clock).
_REFERENCE = datetime(2026, 1, 1, tzinfo=UTC)
_PERIOD_SAMPLES = 20


def _named_twice(
    name: str, existing: ScheduleDefinition, new: ScheduleDefinition
) -> DeclarationError:
    return _invalid(
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


def _invalid(name: Any, message: str) -> DeclarationError:
    return DeclarationError(f"Schedule {name!r}: {message}", code="schedule-invalid")


def _duration(name: str, option: str, value: Any, *, allow_zero: bool) -> timedelta:
    try:
        return parse_duration(value, name=f"{option}=", allow_zero=allow_zero)
    except InvalidInput as error:
        raise _invalid(name, error.args[0]) from error


def _text(name: str, option: str, value: Any, fix: str, max_length: int = 200) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _invalid(name, f"{option}= is required: {fix}")
    if len(value.strip()) > max_length:
        raise _invalid(name, f"{option}= is longer than {max_length} characters.")
    return value.strip()


def _zone(name: str, timezone: Any) -> str:
    if not isinstance(timezone, str) or not timezone:
        raise _invalid(
            name, "timezone= must be an IANA zone name such as 'UTC' or 'Europe/Berlin'."
        )
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise _invalid(
            name,
            f"unknown time zone {timezone!r}. Use an IANA zone name such as 'Europe/Berlin' or "
            "'America/New_York' (python -c 'import zoneinfo; print(zoneinfo.available_timezones"
            "())' lists them), or 'UTC'.",
        ) from error
    return timezone


def _timetable(
    name: str,
    cron: Any,
    every: Any,
    timezone: Any,
    reason: Any,
    dst_skipped: Any,
    dst_repeated: Any,
) -> Timetable:
    if (cron is None) == (every is None):
        raise _invalid(
            name, "give exactly one of cron='0 2 * * *' (a cron expression) or every='1h'."
        )
    zone = _zone(name, timezone)
    local_options = bool(reason or dst_skipped or dst_repeated)
    if every is not None:
        return _interval(name, every, local=zone not in UTC_ZONES or local_options)
    if not isinstance(cron, str) or not croniter.is_valid(cron):
        raise _invalid(
            name,
            f"invalid cron expression {cron!r}. Use five fields, minute hour day-of-month month "
            "day-of-week, e.g. '0 2 * * *' for 02:00 daily (a sixth field adds seconds).",
        )
    if zone in UTC_ZONES:
        if local_options:
            raise _invalid(
                name,
                "local_time_reason, dst_skipped and dst_repeated apply to business-local "
                "schedules only: name the IANA zone with timezone=, or remove them (UTC has no "
                "daylight saving).",
            )
        return Timetable(cron=cron)
    _check_local_time(name, zone, reason, dst_skipped, dst_repeated)
    return Timetable(cron=cron, zone=zone, dst_skipped=dst_skipped, dst_repeated=dst_repeated)


def _interval(name: str, every: Any, *, local: bool) -> Timetable:
    """An ``every=`` timetable: whole seconds, in UTC (``local``: a zone or its options given)."""
    interval = _duration(name, "every", every, allow_zero=False)
    if interval.total_seconds() < 1 or interval.total_seconds() != int(interval.total_seconds()):
        raise _invalid(
            name, f"every= must be a whole number of seconds, 1s or more; got {every!r}."
        )
    if local:
        raise _invalid(
            name,
            "every= schedules are fixed intervals in UTC (anchored at the Unix epoch), so "
            "they take no timezone, local_time_reason or DST options. Use cron= for a "
            "business-local wall-clock time.",
        )
    return Timetable(every=interval)


def _check_local_time(
    name: str, zone: str, reason: Any, dst_skipped: Any, dst_repeated: Any
) -> None:
    """A business-local cron schedule says why it follows local time, and what it does on the
    days daylight saving skips or repeats its wall-clock time."""
    if not isinstance(reason, str) or not reason.strip():
        raise _invalid(
            name,
            f"timezone={zone!r} makes it a business-local schedule, which needs "
            "local_time_reason= saying why it must follow local wall-clock time (for example "
            "'readers expect the statement at 9:00 their time'); otherwise use timezone='UTC'.",
        )
    if dst_skipped not in DST_SKIPPED:
        raise _invalid(
            name,
            f"a business-local schedule must say what happens when its wall-clock time does not "
            f"exist (spring forward): dst_skipped='shift' (run at the first valid instant after "
            f"the gap) or 'skip'; got {dst_skipped!r}.",
        )
    if dst_repeated not in DST_REPEATED:
        raise _invalid(
            name,
            f"a business-local schedule must say what happens when its wall-clock time occurs "
            f"twice (fall back): dst_repeated='first' (run once) or 'both'; got "
            f"{dst_repeated!r}.",
        )


def _shortest_period(timetable: Timetable) -> timedelta | None:
    """The shortest gap among the first firings after a fixed reference instant."""
    if timetable.every is not None:
        return timetable.every
    instants = timetable.next_times(_REFERENCE, _PERIOD_SAMPLES)
    gaps = [b - a for a, b in pairwise(instants)]
    return min(gaps) if gaps else None


def _decide_by(name: str, value: Any) -> date:
    if isinstance(value, datetime):
        raise _invalid(name, "decide_by= takes a date (datetime.date or 'YYYY-MM-DD').")
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise _invalid(name, f"decide_by= must be a date such as '2026-06-30'; got {value!r}.")


# The groups of schedule()'s validation, in the order it reports problems ---------------------


def _check_identity(name: Any, job: Any) -> None:
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise _invalid(
            name,
            "a schedule name is 1-100 letters, digits or '_.-' (no colon), starting with a "
            "letter or digit, e.g. 'billing.nightly-reconcile'.",
        )
    if not isinstance(job, JobDefinition):
        raise _invalid(
            name,
            f"job= must be a function declared with @job (got {type(job).__name__}); declare "
            "the job in your app's jobs.py and import it into schedules.py.",
        )


def _check_fires(name: str, cron: Any, timetable: Timetable) -> None:
    """A valid cron expression may still fail to evaluate, or name a date that never comes."""
    try:
        upcoming = timetable.next_times(_REFERENCE, 2)
    except (ValueError, KeyError) as error:  # croniter refuses some expressions only here
        raise _invalid(
            name, f"the cron expression {cron!r} cannot be evaluated: {error}."
        ) from error
    if not upcoming:
        raise _invalid(
            name, f"the cron expression {cron!r} never fires (a date that does not exist?)."
        )


def _policies(name: str, misfire: Any, overlap: Any, max_catchup: Any) -> tuple[Misfire, Overlap]:
    """What happens to missed instants and to an occurrence that would overlap another."""
    if misfire not in MISFIRE_POLICIES:
        raise _invalid(
            name,
            f"misfire= must say what happens to instants missed while no scheduler ran: 'skip' "
            f"(record them as skipped), 'run_once' (run the latest, skip the rest) or 'run_all' "
            f"(run them, up to max_catchup); got {misfire!r}.",
        )
    if overlap not in OVERLAP_POLICIES:
        raise _invalid(
            name,
            f"overlap= must be 'forbid' (never two occurrences running at once) or 'allow'; "
            f"got {overlap!r}.",
        )
    if (
        not isinstance(max_catchup, int)
        or isinstance(max_catchup, bool)
        or not 1 <= max_catchup <= MAX_CATCHUP_LIMIT
    ):
        raise _invalid(
            name,
            f"max_catchup= must be a whole number from 1 to {MAX_CATCHUP_LIMIT}; got "
            f"{max_catchup!r}.",
        )
    return Misfire(misfire), Overlap(overlap)


def _owners(name: str, operating_owner: Any, record_owner: Any) -> tuple[str, str]:
    operating = _text(
        name,
        "operating_owner",
        operating_owner,
        "who runs this schedule day to day and answers its alerts (a team or an address).",
    )
    recording = _text(
        name,
        "record_owner",
        record_owner,
        "who owns the records this schedule changes and decides what it should do.",
    )
    return operating, recording


def _status(
    name: str, status: Any, decider: Any, decide_by: Any
) -> tuple[ScheduleStatus, str, date | None]:
    """The status, and for a draft who decides whether it goes active, and by when."""
    if status not in STATUSES:
        raise _invalid(name, f"status= must be 'draft', 'active' or 'retired'; got {status!r}.")
    decided_by = decider.strip() if isinstance(decider, str) else ""
    deadline = _decide_by(name, decide_by) if decide_by is not None else None
    if status == ScheduleStatus.DRAFT and (not decided_by or deadline is None):
        raise _invalid(
            name,
            "a draft schedule needs decider= (who decides whether it goes active) and "
            "decide_by= (the date they decide by, e.g. '2026-06-30'). It is not planned until "
            "its status is 'active'.",
        )
    return ScheduleStatus(status), decided_by, deadline


def _jitter(name: str, jitter: Any, timetable: Timetable) -> timedelta:
    """The delay, shorter than the time between two firings so occurrences stay in order."""
    jitter_delay = _duration(name, "jitter", jitter, allow_zero=True)
    shortest = _shortest_period(timetable)
    if shortest is not None and jitter_delay >= shortest:
        raise _invalid(
            name,
            f"jitter= ({jitter!r}) must be shorter than the time between two firings "
            f"({format_duration(shortest)}), or occurrences would run out of order.",
        )
    return jitter_delay


def _run_limits(name: str, job: JobDefinition, retry: Any, timeout: Any) -> tuple[Retry, timedelta]:
    """The retry policy and timeout of each run: the schedule's if given, else the job's."""
    try:
        policy = Retry.coerce(retry) if retry is not None else job.retry
    except (InvalidInput, DeclarationError) as error:
        raise _invalid(name, error.args[0]) from error
    run_timeout = (
        _duration(name, "timeout", timeout, allow_zero=False)
        if timeout is not None
        else job.timeout
    )
    return policy, run_timeout


def _arguments(name: str, job: JobDefinition, args: Any) -> dict[str, Any]:
    """The job's arguments, checked as an enqueue would check them (a copy the caller cannot
    change afterwards)."""
    arguments = {} if args is None else args
    if not isinstance(arguments, dict):
        raise _invalid(name, "args= must be a dict of the job's arguments (JSON values).")
    try:
        job.prepare(dict(arguments))
        dumps(arguments)
    except (InvalidInput, TypeError, ValueError) as error:
        message = error.args[0] if error.args else str(error)
        raise _invalid(name, f"args= does not fit job {job.name!r}: {message}") from error
    return dict(arguments)


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
    _check_identity(name, job)
    timetable = _timetable(
        name, cron, every, timezone, local_time_reason, dst_skipped, dst_repeated
    )
    _check_fires(name, cron, timetable)
    misfire_policy, overlap_policy = _policies(name, misfire, overlap, max_catchup)
    operating, recording = _owners(name, operating_owner, record_owner)
    state, decided_by, deadline = _status(name, status, decider, decide_by)
    jitter_delay = _jitter(name, jitter, timetable)
    policy, run_timeout = _run_limits(name, job, retry, timeout)
    kept = _duration(name, "retention", retention, allow_zero=False)
    late = (
        _duration(name, "grace", grace, allow_zero=True)
        if grace is not None
        else jitter_delay + run_timeout + DEFAULT_GRACE_MARGIN
    )
    arguments = _arguments(name, job, args)
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
