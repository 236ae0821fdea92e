"""When a schedule fires, as UTC instants: pure maths, the time is always passed in.

Cron expressions are evaluated over **naive local wall-clock times** (croniter), and each
wall time is then resolved to UTC instants in the schedule's IANA zone (zoneinfo):

- a wall time that does not exist (the hour a spring-forward skips) is moved to the first
  valid instant after the gap (``dst_skipped="shift"``) or dropped (``"skip"``); several wall
  times in one gap shift to the same instant and fire once;
- a wall time that exists twice (the hour a fall-back repeats) fires at its first instant
  only (``dst_repeated="first"``) or at both (``"both"``).

``every=`` timetables are fixed intervals in UTC anchored at the Unix epoch, so every replica
computes the same instants whenever it starts. Nothing here reads a clock or a database.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import cast
from zoneinfo import ZoneInfo

from croniter import croniter
from croniter.croniter import CroniterError

from ..core.enums import DstRepeated, DstSkipped, values_of

#: Zone keys that mean UTC: schedules in them need no DST behaviour.
UTC_ZONES = frozenset({"UTC", "Etc/UTC"})
DST_SKIPPED = values_of(DstSkipped)
DST_REPEATED = values_of(DstRepeated)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: Wider than any UTC-offset change in the tz database: how far to look around a transition.
TRANSITION_WINDOW = timedelta(hours=3)
_SECOND = timedelta(seconds=1)
_MICROSECOND = timedelta(microseconds=1)


def _aware(instant: datetime, what: str = "instant") -> datetime:
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"The {what} {instant.isoformat()} has no time zone; pass aware times.")
    return instant.astimezone(UTC)


@dataclass(frozen=True)
class Timetable:
    """A schedule's firing rule: ``cron`` in ``zone``, or ``every`` (UTC, epoch-anchored).

    Construct it through ``litejobs.schedule`` (which validates and explains); the methods
    take and answer aware UTC datetimes and never read the clock.
    """

    cron: str | None = None
    every: timedelta | None = None
    zone: str = "UTC"
    dst_skipped: str | None = None
    dst_repeated: str | None = None

    def __post_init__(self) -> None:
        if (self.cron is None) == (self.every is None):
            raise ValueError("A timetable takes exactly one of cron= or every=.")
        ZoneInfo(self.zone)  # an unknown zone is refused here, not at the first firing
        if self.every is not None:
            micros = _micros(self.every)
            if micros < 1_000_000 or micros % 1_000_000:
                raise ValueError("every= must be a whole number of seconds, 1s or more.")
        elif not self.local:
            return
        elif self.dst_skipped not in DST_SKIPPED or self.dst_repeated not in DST_REPEATED:
            raise ValueError(
                "A local timetable needs dst_skipped ('shift'|'skip') and dst_repeated "
                "('first'|'both')."
            )

    @cached_property
    def tzinfo(self) -> ZoneInfo:
        """The zone wall-clock times are read in."""
        return ZoneInfo(self.zone)

    @property
    def local(self) -> bool:
        """Whether wall-clock times are read in a zone other than UTC."""
        return self.cron is not None and self.zone not in UTC_ZONES

    # Public questions --------------------------------------------------------------------

    def iter_after(self, instant: datetime) -> Iterator[datetime]:
        """Every firing instant strictly after ``instant``, strictly increasing (endless)."""
        instant = _aware(instant)
        if self.every is not None:
            step = _micros(self.every)
            k = _micros(instant - EPOCH) // step + 1
            while True:
                yield EPOCH + timedelta(microseconds=k * step)
                k += 1
        yield from self._cron_forward(instant)

    def iter_at_or_before(self, instant: datetime) -> Iterator[datetime]:
        """Every firing instant at or before ``instant``, strictly decreasing."""
        instant = _aware(instant)
        if self.every is not None:
            step = _micros(self.every)
            k = _micros(instant - EPOCH) // step
            while k >= 0:
                yield EPOCH + timedelta(microseconds=k * step)
                k -= 1
            return
        yield from self._cron_backward(instant)

    def after(self, instant: datetime) -> datetime | None:
        """The first firing instant strictly after ``instant`` (None: it never fires again)."""
        return next(self.iter_after(instant), None)

    def latest_at_or_before(self, instant: datetime) -> datetime | None:
        """The last firing instant at or before ``instant`` (None: it never fired)."""
        return next(self.iter_at_or_before(instant), None)

    def between(self, start: datetime, end: datetime, limit: int | None = None) -> list[datetime]:
        """Firing instants in ``(start, end]``, increasing, at most ``limit`` of them."""
        end = _aware(end)
        found: list[datetime] = []
        for instant in self.iter_after(start):
            if instant > end or (limit is not None and len(found) >= limit):
                break
            found.append(instant)
        return found

    def next_times(self, instant: datetime, count: int = 5) -> list[datetime]:
        """The next ``count`` firing instants after ``instant`` (what the admin shows)."""
        found = []
        for when in self.iter_after(instant):
            found.append(when)
            if len(found) >= count:
                break
        return found

    def period_at(self, instant: datetime) -> timedelta | None:
        """The gap between the last two firings at or before ``instant`` (the current period)."""
        if self.every is not None:
            return self.every
        earlier = self.iter_at_or_before(instant)
        latest, previous = next(earlier, None), next(earlier, None)
        if latest is None or previous is None:
            return None
        return latest - previous

    # Cron over wall-clock time ---------------------------------------------------------------

    def _walls(self, start: datetime, *, forward: bool) -> Iterator[datetime]:
        """Naive wall times the cron expression matches, after (or before) ``start``."""
        ticks = croniter(cast(str, self.cron), start)  # wall times are cron schedules'
        step = ticks.get_next if forward else ticks.get_prev
        while True:
            try:
                yield step(datetime)
            except (CroniterError, OverflowError):  # no further match, or past year 1 / 9999
                return

    def _wall(self, instant: datetime) -> datetime:
        return instant.astimezone(self.tzinfo).replace(tzinfo=None)

    def _slack(self, instant: datetime) -> timedelta:
        """How far wall iteration must start beyond ``instant``'s own wall time: the size of
        a nearby offset change (0 far from any transition, as almost always)."""
        if not self.local:
            return timedelta(0)
        before = (instant - TRANSITION_WINDOW).astimezone(self.tzinfo).utcoffset()
        after = (instant + TRANSITION_WINDOW).astimezone(self.tzinfo).utcoffset()
        return abs(cast(timedelta, after) - cast(timedelta, before))  # aware: offsets known

    def _resolve(self, wall: datetime) -> tuple[str, list[datetime]]:
        """``(kind, instants)`` of one wall time: kind is normal, gap or repeated."""
        if not self.local:
            return "normal", [wall.replace(tzinfo=UTC)]
        first = wall.replace(tzinfo=self.tzinfo, fold=0)
        second = wall.replace(tzinfo=self.tzinfo, fold=1)
        if first.utcoffset() == second.utcoffset():
            return "normal", [first.astimezone(UTC)]
        early = first.astimezone(UTC)
        if early.astimezone(self.tzinfo).replace(tzinfo=None) == wall:
            # The wall time exists twice: fold=0 is the earlier instant.
            late = second.astimezone(UTC)
            return "repeated", [early, late] if self.dst_repeated == DstRepeated.BOTH else [early]
        if self.dst_skipped == DstSkipped.SKIP:
            return "gap", []
        return "gap", [self._gap_end(wall)]

    def _gap_end(self, wall: datetime) -> datetime:
        """The first valid instant after the gap that swallows ``wall``: the transition."""
        after_offset = wall.replace(tzinfo=self.tzinfo, fold=1).utcoffset()
        low = wall.replace(tzinfo=self.tzinfo, fold=1).astimezone(UTC)  # before the transition
        high = wall.replace(tzinfo=self.tzinfo, fold=0).astimezone(UTC)  # after it
        lo, hi = 0, int((high - low).total_seconds())
        while lo < hi:  # the first whole second whose offset is the new one
            mid = (lo + hi) // 2
            if (low + timedelta(seconds=mid)).astimezone(self.tzinfo).utcoffset() == after_offset:
                hi = mid
            else:
                lo = mid + 1
        return low + timedelta(seconds=lo)

    def _cron_forward(self, instant: datetime) -> Iterator[datetime]:
        start = self._wall(instant) - self._slack(instant)
        last = instant
        later: list[datetime] = []  # second instants of repeated wall times, emitted in order
        for wall in self._walls(start, forward=True):
            kind, instants = self._resolve(wall)
            if kind == "repeated":
                # First instants of a repeated hour all precede its second instants.
                head, later = instants[:1], later + instants[1:]
            else:
                head, later = later + instants, []
            for when in head:
                if when > last:
                    last = when
                    yield when

    def _cron_backward(self, instant: datetime) -> Iterator[datetime]:
        # croniter's get_prev is exclusive: start just past the last whole second to include.
        start = (self._wall(instant) + self._slack(instant)).replace(microsecond=0) + _SECOND
        last = instant + _MICROSECOND
        earlier: list[datetime] = []  # first instants of repeated wall times, emitted last
        for wall in self._walls(start, forward=False):
            kind, instants = self._resolve(wall)
            if kind == "repeated":
                head, earlier = instants[1:], earlier + instants[:1]
            else:
                head, earlier = earlier + instants, []
            for when in head:
                if when < last:
                    last = when
                    yield when


def _micros(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def jitter_for(schedule: str, instant: datetime, jitter: timedelta) -> timedelta:
    """A deterministic delay in ``[0, jitter)`` for one occurrence of ``schedule``.

    Derived from a hash of the schedule's name and the instant, so every replica computes the
    same run time for an occurrence, and a fleet of schedules firing at one instant spreads out.
    """
    span = _micros(jitter)
    if span <= 0:
        return timedelta(0)
    digest = hashlib.sha256(f"{schedule}|{_aware(instant).isoformat()}".encode()).digest()
    return timedelta(microseconds=int.from_bytes(digest[:8], "big") % span)
