"""Timetable maths, pure: DST in four zones under both policies, every=, jitter, planning.

No database and no clock: every instant is passed in (the scheduler's only time source is
the injected clock; these functions never read one).
"""

from datetime import UTC, datetime, timedelta
from itertools import islice, pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from litejobs.scheduling import planning
from litejobs.scheduling.timetable import Timetable, jitter_for


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def local(zone: str, *args, fold: int = 0) -> datetime:
    return datetime(*args, tzinfo=ZoneInfo(zone), fold=fold).astimezone(UTC)


def fires(cron, zone, skipped, repeated, start, end) -> list[datetime]:
    timetable = Timetable(cron=cron, zone=zone, dst_skipped=skipped, dst_repeated=repeated)
    return timetable.between(start, end)


# The skipped hour (spring forward) ---------------------------------------------------------

SKIPPED_HOUR = [
    # zone, cron, a wall time inside the gap, the first valid instant after the gap
    ("Europe/Berlin", "30 2 * * *", (2026, 3, 29), local("Europe/Berlin", 2026, 3, 29, 3, 0)),
    ("America/New_York", "30 2 * * *", (2026, 3, 8), local("America/New_York", 2026, 3, 8, 3, 0)),
    # Lord Howe moves by 30 minutes: 02:00 -> 02:30, so 02:15 does not exist.
    (
        "Australia/Lord_Howe",
        "15 2 * * *",
        (2026, 10, 4),
        local("Australia/Lord_Howe", 2026, 10, 4, 2, 30),
    ),
]


@pytest.mark.parametrize(("zone", "cron", "day", "gap_end"), SKIPPED_HOUR)
def test_a_skipped_wall_time_shifts_to_the_end_of_the_gap(zone, cron, day, gap_end):
    start = local(zone, *day) - timedelta(days=1)
    end = local(zone, *day) + timedelta(days=2)
    instants = fires(cron, zone, "shift", "first", start, end)
    assert len(instants) == 3  # the day before, the transition day (shifted), the day after
    assert instants[1] == gap_end
    # The transition is exactly there: one second earlier the old offset still held.
    tz = ZoneInfo(zone)
    assert (gap_end - timedelta(seconds=1)).astimezone(tz).utcoffset() != gap_end.astimezone(
        tz
    ).utcoffset()
    # The other days fire at the wall time, as usual.
    hour, minute = int(cron.split()[1]), int(cron.split()[0])
    for instant in (instants[0], instants[2]):
        wall = instant.astimezone(tz)
        assert (wall.hour, wall.minute) == (hour, minute)


@pytest.mark.parametrize(("zone", "cron", "day", "gap_end"), SKIPPED_HOUR)
def test_a_skipped_wall_time_is_dropped_with_skip(zone, cron, day, gap_end):
    start = local(zone, *day) - timedelta(days=1)
    end = local(zone, *day) + timedelta(days=2)
    instants = fires(cron, zone, "skip", "first", start, end)
    assert len(instants) == 2
    assert all(i.astimezone(ZoneInfo(zone)).timetuple()[:3] != day for i in instants)


def test_several_wall_times_in_one_gap_shift_to_one_instant_that_fires_once():
    # */15 between 02:00 and 03:00: 02:00, 02:15, 02:30, 02:45 do not exist in Berlin that day.
    instants = fires(
        "*/15 2-3 * * *",
        "Europe/Berlin",
        "shift",
        "first",
        utc(2026, 3, 28, 23),
        utc(2026, 3, 29, 3),
    )
    walls = [i.astimezone(ZoneInfo("Europe/Berlin")).strftime("%H:%M") for i in instants]
    assert walls == ["03:00", "03:15", "03:30", "03:45"]


# The repeated hour (fall back) -------------------------------------------------------------

REPEATED_HOUR = [
    # zone, cron, the day, (hour, minute) of the repeated wall time
    ("Europe/Berlin", "30 2 * * *", (2026, 10, 25), (2, 30)),
    ("America/New_York", "30 1 * * *", (2026, 11, 1), (1, 30)),
    # Lord Howe falls back by 30 minutes: 02:00 -> 01:30, so 01:45 happens twice.
    ("Australia/Lord_Howe", "45 1 * * *", (2026, 4, 5), (1, 45)),
]


@pytest.mark.parametrize(("zone", "cron", "day", "wall"), REPEATED_HOUR)
def test_a_repeated_wall_time_fires_once_at_its_first_instant_with_first(zone, cron, day, wall):
    first = local(zone, *day, *wall, fold=0)
    instants = fires(
        cron, zone, "shift", "first", first - timedelta(hours=6), first + timedelta(hours=6)
    )
    assert instants == [first]


@pytest.mark.parametrize(("zone", "cron", "day", "wall"), REPEATED_HOUR)
def test_a_repeated_wall_time_fires_at_both_instants_with_both(zone, cron, day, wall):
    first = local(zone, *day, *wall, fold=0)
    second = local(zone, *day, *wall, fold=1)
    assert second - first in (timedelta(hours=1), timedelta(minutes=30))
    instants = fires(
        cron, zone, "shift", "both", first - timedelta(hours=6), first + timedelta(hours=6)
    )
    assert instants == [first, second]
    # Both read the same wall time.
    tz = ZoneInfo(zone)
    assert {(i.astimezone(tz).hour, i.astimezone(tz).minute) for i in instants} == {wall}


def test_a_repeated_hour_with_several_wall_times_keeps_instants_in_order():
    # */20 in the hour Berlin repeats: 02:00, 02:20, 02:40 summer time, then again winter time.
    instants = fires(
        "*/20 2 * * *",
        "Europe/Berlin",
        "shift",
        "both",
        utc(2026, 10, 24, 23),
        utc(2026, 10, 25, 3),
    )
    assert instants == [utc(2026, 10, 25, 0, m) for m in (0, 20, 40)] + [
        utc(2026, 10, 25, 1, m) for m in (0, 20, 40)
    ]


# A zone without DST ------------------------------------------------------------------------


@pytest.mark.parametrize("skipped", ["shift", "skip"])
@pytest.mark.parametrize("repeated", ["first", "both"])
def test_asia_kolkata_fires_once_a_day_at_the_same_instant_under_every_policy(skipped, repeated):
    instants = fires(
        "30 2 * * *", "Asia/Kolkata", skipped, repeated, utc(2026, 1, 1), utc(2027, 1, 1)
    )
    assert len(instants) == 365
    assert {(i.hour, i.minute) for i in instants} == {(21, 0)}  # 02:30 IST = 21:00 UTC
    assert all(b - a == timedelta(days=1) for a, b in pairwise(instants))


# UTC and every= ----------------------------------------------------------------------------


def test_a_utc_cron_ignores_every_local_transition():
    instants = Timetable(cron="0 2 * * *").between(utc(2026, 3, 27), utc(2026, 4, 1))
    assert instants == [utc(2026, 3, d, 2) for d in range(27, 32)]


def test_every_is_anchored_at_the_epoch_so_replicas_agree_whenever_they_start():
    timetable = Timetable(every=timedelta(minutes=7))
    early = timetable.between(utc(2026, 3, 1, 12), utc(2026, 3, 1, 14))
    late = timetable.between(utc(2026, 3, 1, 12, 33, 17), utc(2026, 3, 1, 14))
    assert late == [i for i in early if i > utc(2026, 3, 1, 12, 33, 17)]
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert all((i - epoch).total_seconds() % 420 == 0 for i in early)
    assert timetable.latest_at_or_before(early[3]) == early[3]


def test_the_period_and_the_latest_instant():
    daily = Timetable(cron="0 2 * * *")
    assert daily.latest_at_or_before(utc(2026, 3, 1, 12)) == utc(2026, 3, 1, 2)
    assert daily.latest_at_or_before(utc(2026, 3, 1, 2)) == utc(2026, 3, 1, 2)
    assert daily.period_at(utc(2026, 3, 1, 12)) == timedelta(days=1)
    assert daily.next_times(utc(2026, 3, 1, 12), 3) == [utc(2026, 3, d, 2) for d in (2, 3, 4)]


# Jitter ------------------------------------------------------------------------------------


def test_jitter_is_deterministic_and_within_bounds():
    bound = timedelta(minutes=5)
    instants = Timetable(cron="*/10 * * * *").between(utc(2026, 3, 1), utc(2026, 3, 3))
    delays = [jitter_for("nightly", i, bound) for i in instants]
    assert delays == [jitter_for("nightly", i, bound) for i in instants]  # every replica agrees
    assert all(timedelta(0) <= d < bound for d in delays)
    assert len(set(delays)) > len(delays) * 0.9  # spread, not one value
    assert [jitter_for("other", i, bound) for i in instants] != delays  # per schedule
    assert jitter_for("nightly", instants[0], timedelta(0)) == timedelta(0)


@settings(max_examples=200, deadline=None)
@given(
    name=st.text(min_size=1, max_size=30),
    seconds=st.integers(min_value=0, max_value=10**9),
    bound_ms=st.integers(min_value=1, max_value=10**8),
)
def test_jitter_always_falls_in_its_bound(name, seconds, bound_ms):
    bound = timedelta(milliseconds=bound_ms)
    instant = utc(2000, 1, 1) + timedelta(seconds=seconds)
    delay = jitter_for(name, instant, bound)
    assert timedelta(0) <= delay < bound
    assert delay == jitter_for(name, instant, bound)


# Properties over transitions ---------------------------------------------------------------

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]
CRONS = ["*/15 * * * *", "30 2 * * *", "45 1 * * *", "0 * * * *", "*/7 1-3 * * *", "15 2 * * 0"]
TRANSITIONS = [
    utc(2026, 3, 29, 1),  # Berlin spring
    utc(2026, 10, 25, 1),  # Berlin autumn
    utc(2026, 3, 8, 7),  # New York spring
    utc(2026, 11, 1, 6),  # New York autumn
    utc(2026, 4, 4, 15),  # Lord Howe autumn (30 min)
    utc(2026, 10, 3, 15, 30),  # Lord Howe spring (30 min)
]


@st.composite
def timetables(draw):
    zone = draw(st.sampled_from(ZONES))
    cron = draw(st.sampled_from(CRONS))
    if zone == "UTC":
        return Timetable(cron=cron)
    return Timetable(
        cron=cron,
        zone=zone,
        dst_skipped=draw(st.sampled_from(["shift", "skip"])),
        dst_repeated=draw(st.sampled_from(["first", "both"])),
    )


def near_transition():
    return st.builds(
        lambda base, minutes, seconds: base + timedelta(minutes=minutes, seconds=seconds),
        st.sampled_from(TRANSITIONS),
        st.integers(min_value=-36 * 60, max_value=36 * 60),
        st.integers(min_value=0, max_value=59),
    )


PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(timetable=timetables(), start=near_transition())
def test_occurrences_strictly_increase(timetable, start):
    instants = list(islice(timetable.iter_after(start), 80))
    assert instants and instants[0] > start
    assert all(a < b for a, b in pairwise(instants))


@PROPERTY_SETTINGS
@given(
    timetable=timetables(),
    start=near_transition(),
    cuts=st.lists(st.integers(min_value=1, max_value=24 * 60), min_size=1, max_size=6),
)
def test_no_instant_is_planned_twice_or_lost_however_the_window_is_cut(timetable, start, cuts):
    end = start + timedelta(hours=30)
    whole = timetable.between(start, end)
    pieces, previous = [], start
    for minutes in sorted({min(start + timedelta(minutes=c), end) for c in cuts} | {end}):
        pieces += timetable.between(previous, minutes)
        previous = minutes
    assert pieces == whole
    assert len(set(pieces)) == len(pieces)


@PROPERTY_SETTINGS
@given(timetable=timetables(), end=near_transition())
def test_walking_backwards_finds_the_same_instants(timetable, end):
    start = end - timedelta(hours=30)
    forward = timetable.between(start, end)
    backward = []
    for instant in timetable.iter_at_or_before(end):
        if instant <= start:
            break
        backward.append(instant)
    assert backward == forward[::-1]
    if forward:
        assert timetable.latest_at_or_before(end) == forward[-1]


@PROPERTY_SETTINGS
@given(
    timetable=timetables(),
    start=near_transition(),
    steps=st.lists(st.integers(min_value=1, max_value=6 * 3600), min_size=1, max_size=12),
    misfire=st.sampled_from(["skip", "run_once", "run_all"]),
)
def test_passes_of_the_planner_never_plan_an_instant_twice(timetable, start, steps, misfire):
    """Whatever the gaps between passes (downtime included), each instant is handled once,
    and ``through`` only moves forward."""
    after, now, seen = start, start, []
    for seconds in steps:
        now += timedelta(seconds=seconds)
        plan = planning.plan(
            timetable,
            after=after,
            now=now,
            horizon=timedelta(seconds=5),
            grace=timedelta(seconds=60),
            misfire=misfire,
            max_catchup=3,
        )
        handled = plan.run + plan.skip
        assert all(i > after for i in handled)
        seen += handled
        if plan.through is not None:
            assert plan.through > after
            after = plan.through
    assert len(seen) == len(set(seen))


# The planner's misfire policies, pure ------------------------------------------------------

EVERY_10M = Timetable(every=timedelta(minutes=10))


def plan_after_downtime(misfire, max_catchup=3):
    # Last planned 12:00; the scheduler comes back at 14:00: 12:10 ... 13:50 were missed.
    return planning.plan(
        EVERY_10M,
        after=utc(2026, 3, 1, 12),
        now=utc(2026, 3, 1, 14),
        horizon=timedelta(seconds=5),
        grace=timedelta(seconds=60),
        misfire=misfire,
        max_catchup=max_catchup,
    )


def minutes(instants):
    return [i.strftime("%H:%M") for i in instants]


def test_skip_records_every_missed_instant_and_runs_only_what_is_due():
    plan = plan_after_downtime("skip")
    assert minutes(plan.run) == ["14:00"]
    assert minutes(plan.skip) == [f"{h}:{m}0" for h in (12, 13) for m in range(6)][1:]
    assert plan.through == utc(2026, 3, 1, 14)


def test_run_once_runs_the_latest_missed_instant():
    plan = plan_after_downtime("run_once")
    assert minutes(plan.run) == ["13:50", "14:00"]
    assert plan.caught_up == 1
    assert len(plan.skip) == 10 and "13:50" not in minutes(plan.skip)


def test_run_all_is_bounded_by_max_catchup():
    plan = plan_after_downtime("run_all", max_catchup=3)
    assert minutes(plan.run) == ["13:30", "13:40", "13:50", "14:00"]
    assert len(plan.skip) == 8


def test_a_long_downtime_of_a_per_second_schedule_stays_bounded():
    plan = planning.plan(
        Timetable(every=timedelta(seconds=1)),
        after=utc(2026, 3, 1),
        now=utc(2026, 3, 8),  # a week: 604,800 missed instants
        horizon=timedelta(seconds=5),
        grace=timedelta(seconds=60),
        misfire="run_all",
        max_catchup=10,
    )
    assert plan.caught_up == 10
    assert len(plan.skip) == planning.SKIP_RECORD_LIMIT
    assert plan.unrecorded
    assert len(plan.run) == 10 + 66  # the caught-up ten, then 60s of grace and 5s of horizon
