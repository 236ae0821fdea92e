"""``schedule()``'s options checked, in named groups in the order it reports problems: the
name and job, the timetable (cron or interval, the zone and its DST behaviour), the policies,
owners, status, jitter, retry and timeout, and the job's arguments. Each refusal is a
``DeclarationError`` (``schedule-invalid``) naming the schedule and the fix."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from ..core.durations import format_duration, parse_duration
from ..core.enums import Misfire, Overlap, ScheduleStatus, values_of
from ..core.payloads import dumps
from ..core.retry import Retry
from ..exceptions import DeclarationError, InvalidInput
from ..jobs.declarations import JobDefinition
from .timetable import DST_REPEATED, DST_SKIPPED, UTC_ZONES, Timetable

MISFIRE_POLICIES = values_of(Misfire)
OVERLAP_POLICIES = values_of(Overlap)
STATUSES = tuple(ScheduleStatus.values)
#: Letters, digits and ``_.-``; no colon (the occurrence key is ``occurrence:<name>:<instant>``).
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
MAX_CATCHUP_LIMIT = 1000
#: A fixed instant to examine a cron expression from (declarations never read the clock).
_REFERENCE = datetime(2026, 1, 1, tzinfo=UTC)
_PERIOD_SAMPLES = 20


def invalid(name: Any, message: str) -> DeclarationError:
    return DeclarationError(f"Schedule {name!r}: {message}", code="schedule-invalid")


def duration(name: str, option: str, value: Any, *, allow_zero: bool) -> timedelta:
    try:
        return parse_duration(value, name=f"{option}=", allow_zero=allow_zero)
    except InvalidInput as error:
        raise invalid(name, error.args[0]) from error


def _text(name: str, option: str, value: Any, fix: str, max_length: int = 200) -> str:
    if not isinstance(value, str) or not value.strip():
        raise invalid(name, f"{option}= is required: {fix}")
    if len(value.strip()) > max_length:
        raise invalid(name, f"{option}= is longer than {max_length} characters.")
    return value.strip()


def _zone(name: str, timezone: Any) -> str:
    if not isinstance(timezone, str) or not timezone:
        raise invalid(name, "timezone= must be an IANA zone name such as 'UTC' or 'Europe/Berlin'.")
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise invalid(
            name,
            f"unknown time zone {timezone!r}. Use an IANA zone name such as 'Europe/Berlin' or "
            "'America/New_York' (python -c 'import zoneinfo; print(zoneinfo.available_timezones"
            "())' lists them), or 'UTC'.",
        ) from error
    return timezone


def timetable(
    name: str,
    cron: Any,
    every: Any,
    timezone: Any,
    reason: Any,
    dst_skipped: Any,
    dst_repeated: Any,
) -> Timetable:
    if (cron is None) == (every is None):
        raise invalid(
            name, "give exactly one of cron='0 2 * * *' (a cron expression) or every='1h'."
        )
    zone = _zone(name, timezone)
    local_options = bool(reason or dst_skipped or dst_repeated)
    if every is not None:
        return _interval(name, every, local=zone not in UTC_ZONES or local_options)
    if not isinstance(cron, str) or not croniter.is_valid(cron):
        raise invalid(
            name,
            f"invalid cron expression {cron!r}. Use five fields, minute hour day-of-month month "
            "day-of-week, e.g. '0 2 * * *' for 02:00 daily (a sixth field adds seconds).",
        )
    if zone in UTC_ZONES:
        if local_options:
            raise invalid(
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
    interval = duration(name, "every", every, allow_zero=False)
    if interval.total_seconds() < 1 or interval.total_seconds() != int(interval.total_seconds()):
        raise invalid(name, f"every= must be a whole number of seconds, 1s or more; got {every!r}.")
    if local:
        raise invalid(
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
        raise invalid(
            name,
            f"timezone={zone!r} makes it a business-local schedule, which needs "
            "local_time_reason= saying why it must follow local wall-clock time (for example "
            "'readers expect the statement at 9:00 their time'); otherwise use timezone='UTC'.",
        )
    if dst_skipped not in DST_SKIPPED:
        raise invalid(
            name,
            f"a business-local schedule must say what happens when its wall-clock time does not "
            f"exist (spring forward): dst_skipped='shift' (run at the first valid instant after "
            f"the gap) or 'skip'; got {dst_skipped!r}.",
        )
    if dst_repeated not in DST_REPEATED:
        raise invalid(
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
        raise invalid(name, "decide_by= takes a date (datetime.date or 'YYYY-MM-DD').")
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise invalid(name, f"decide_by= must be a date such as '2026-06-30'; got {value!r}.")


# The groups of schedule()'s validation, in the order it reports problems ---------------------


def check_identity(name: Any, job: Any) -> None:
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise invalid(
            name,
            "a schedule name is 1-100 letters, digits or '_.-' (no colon), starting with a "
            "letter or digit, e.g. 'billing.nightly-reconcile'.",
        )
    if not isinstance(job, JobDefinition):
        raise invalid(
            name,
            f"job= must be a function declared with @job (got {type(job).__name__}); declare "
            "the job in your app's jobs.py and import it into schedules.py.",
        )


def check_fires(name: str, cron: Any, timetable: Timetable) -> None:
    """A valid cron expression may still fail to evaluate, or name a date that never comes."""
    try:
        upcoming = timetable.next_times(_REFERENCE, 2)
    except (ValueError, KeyError) as error:  # croniter refuses some expressions only here
        raise invalid(
            name, f"the cron expression {cron!r} cannot be evaluated: {error}."
        ) from error
    if not upcoming:
        raise invalid(
            name, f"the cron expression {cron!r} never fires (a date that does not exist?)."
        )


def policies(name: str, misfire: Any, overlap: Any, max_catchup: Any) -> tuple[Misfire, Overlap]:
    """What happens to missed instants and to an occurrence that would overlap another."""
    if misfire not in MISFIRE_POLICIES:
        raise invalid(
            name,
            f"misfire= must say what happens to instants missed while no scheduler ran: 'skip' "
            f"(record them as skipped), 'run_once' (run the latest, skip the rest) or 'run_all' "
            f"(run them, up to max_catchup); got {misfire!r}.",
        )
    if overlap not in OVERLAP_POLICIES:
        raise invalid(
            name,
            f"overlap= must be 'forbid' (never two occurrences running at once) or 'allow'; "
            f"got {overlap!r}.",
        )
    if (
        not isinstance(max_catchup, int)
        or isinstance(max_catchup, bool)
        or not 1 <= max_catchup <= MAX_CATCHUP_LIMIT
    ):
        raise invalid(
            name,
            f"max_catchup= must be a whole number from 1 to {MAX_CATCHUP_LIMIT}; got "
            f"{max_catchup!r}.",
        )
    return Misfire(misfire), Overlap(overlap)


def owners(name: str, operating_owner: Any, record_owner: Any) -> tuple[str, str]:
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


def status(
    name: str, status: Any, decider: Any, decide_by: Any
) -> tuple[ScheduleStatus, str, date | None]:
    """The status, and for a draft who decides whether it goes active, and by when."""
    if status not in STATUSES:
        raise invalid(name, f"status= must be 'draft', 'active' or 'retired'; got {status!r}.")
    decided_by = decider.strip() if isinstance(decider, str) else ""
    deadline = _decide_by(name, decide_by) if decide_by is not None else None
    if status == ScheduleStatus.DRAFT and (not decided_by or deadline is None):
        raise invalid(
            name,
            "a draft schedule needs decider= (who decides whether it goes active) and "
            "decide_by= (the date they decide by, e.g. '2026-06-30'). It is not planned until "
            "its status is 'active'.",
        )
    return ScheduleStatus(status), decided_by, deadline


def jitter(name: str, jitter: Any, timetable: Timetable) -> timedelta:
    """The delay, shorter than the time between two firings so occurrences stay in order."""
    jitter_delay = duration(name, "jitter", jitter, allow_zero=True)
    shortest = _shortest_period(timetable)
    if shortest is not None and jitter_delay >= shortest:
        raise invalid(
            name,
            f"jitter= ({jitter!r}) must be shorter than the time between two firings "
            f"({format_duration(shortest)}), or occurrences would run out of order.",
        )
    return jitter_delay


def run_limits(name: str, job: JobDefinition, retry: Any, timeout: Any) -> tuple[Retry, timedelta]:
    """The retry policy and timeout of each run: the schedule's if given, else the job's."""
    try:
        policy = Retry.coerce(retry) if retry is not None else job.retry
    except (InvalidInput, DeclarationError) as error:
        raise invalid(name, error.args[0]) from error
    run_timeout = (
        duration(name, "timeout", timeout, allow_zero=False) if timeout is not None else job.timeout
    )
    return policy, run_timeout


def arguments(name: str, job: JobDefinition, args: Any) -> dict[str, Any]:
    """The job's arguments, checked as an enqueue would check them (a copy the caller cannot
    change afterwards)."""
    arguments = {} if args is None else args
    if not isinstance(arguments, dict):
        raise invalid(name, "args= must be a dict of the job's arguments (JSON values).")
    try:
        job.prepare(dict(arguments))
        dumps(arguments)
    except (InvalidInput, TypeError, ValueError) as error:
        message = error.args[0] if error.args else str(error)
        raise invalid(name, f"args= does not fit job {job.name!r}: {message}") from error
    return dict(arguments)
