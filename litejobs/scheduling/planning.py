"""What the leader does with a schedule's timetable on each pass: pure, the time passed in.

Instants up to ``now + horizon`` are planned ahead (their jobs wait, scheduled, until due, so
a per-second schedule runs on time). An instant older than ``now - grace`` was **missed** (no
scheduler ran: downtime, or a failover longer than the grace), and the schedule's misfire
policy decides its fate:

- ``skip``: every missed instant is recorded as a ``skipped`` occurrence;
- ``run_once``: the latest missed instant runs, the others are recorded as skipped;
- ``run_all``: the latest ``max_catchup`` missed instants run, older ones are recorded as
  skipped.

At most ``SKIP_RECORD_LIMIT`` skipped instants are recorded per catch-up (the newest); older
ones are left unrecorded (``Plan.unrecorded``) and the leader logs that they existed. The
work per pass is bounded whatever the downtime: missed instants are walked backwards from the
cutoff, never forwards from the last planned one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..core.enums import Misfire
from .timetable import Timetable

#: Missed instants recorded as skipped per catch-up, at most (the most recent ones).
SKIP_RECORD_LIMIT = 100
#: On-time instants planned per pass, at most (the next pass continues).
PLAN_LIMIT = 500
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class Plan:
    """One pass over one schedule: instants to run, instants to record as skipped."""

    run: list[datetime] = field(default_factory=list)
    skip: list[datetime] = field(default_factory=list)
    caught_up: int = 0  # how many of ``run`` were missed instants run by the policy
    unrecorded: bool = False  # more missed instants existed than were recorded
    through: datetime | None = None  # the latest instant handled; None: nothing new

    @property
    def empty(self) -> bool:
        """Whether the pass has nothing to write."""
        return not self.run and not self.skip


def plan(
    timetable: Timetable,
    *,
    after: datetime,
    now: datetime,
    horizon: timedelta,
    grace: timedelta,
    misfire: str,
    max_catchup: int,
) -> Plan:
    """The instants after ``after`` (exclusive) up to ``now + horizon``, by policy."""
    cutoff = now - grace
    caught: list[datetime] = []
    skipped: list[datetime] = []
    unrecorded = False
    if after < cutoff:
        keep = {Misfire.SKIP: 0, Misfire.RUN_ONCE: 1, Misfire.RUN_ALL: max_catchup}[
            Misfire(misfire)
        ]
        budget = keep + SKIP_RECORD_LIMIT
        missed: list[datetime] = []  # newest first
        for instant in timetable.iter_at_or_before(cutoff - _MICROSECOND):
            if instant <= after:
                break
            if len(missed) >= budget:
                unrecorded = True
                break
            missed.append(instant)
        caught = sorted(missed[:keep])
        skipped = sorted(missed[keep:])
    on_time = timetable.between(max(after, cutoff - _MICROSECOND), now + horizon, PLAN_LIMIT)
    handled = caught + skipped + on_time
    return Plan(
        run=caught + on_time,
        skip=skipped,
        caught_up=len(caught),
        unrecorded=unrecorded,
        through=max(handled) if handled else None,
    )
