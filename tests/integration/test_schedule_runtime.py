"""The scheduler in-process, under the injected clock: planning, leadership, misfires,
overlap, jitter, fences, retries, replay, disable / enable, retention.

Schedules are declared per test (``declare``) and planned by a ``Scheduler`` restricted to
them (``scheduler``), driven one ``step()`` at a time; the worker runs ``--once``.
"""

from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from django.db import connection

from litejobs import Retry
from litejobs.exceptions import InvalidInput, OccurrenceNotFound, TransitionRefused
from litejobs.jobs import catalog, claims, operations, transitions
from litejobs.models import Job, JobState, Occurrence, OccurrenceReplay, Schedule
from litejobs.runtime import leadership
from litejobs.runtime.listening import connect
from litejobs.scheduling import declarations
from litejobs.scheduling import operations as schedules
from litejobs.scheduling.health import health
from litejobs.scheduling.retention import purge_occurrences
from litejobs.scheduling.scheduler import LostLeadership, Scheduler
from litejobs.scheduling.timetable import jitter_for
from tests.testapp.jobs import occupied, scheduled_mark
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db(transaction=True)

NOON = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def at(hour: int, minute: int, second: int = 0) -> datetime:
    return NOON.replace(hour=hour, minute=minute, second=second)


def hhmm(instants) -> list[str]:
    return [i.strftime("%H:%M") for i in instants]


def claim(clock, owner="worker-a"):
    now = clock.now()
    with connection.cursor() as cursor:
        return (
            claims.claim(
                cursor,
                owner=owner,
                queues=[],
                limit=10,
                now=now,
                lease=timedelta(minutes=1),
            ).jobs
            + claims.claim_limited(
                cursor,
                owner=owner,
                queues=[],
                limit=10,
                now=now,
                lease=timedelta(minutes=1),
            ).jobs
        )


# Planning and running ----------------------------------------------------------------------


def test_an_occurrence_is_planned_ahead_runs_once_and_keeps_its_times(
    clock, declare, scheduler, run_worker
):
    declare("t.minutely", job=scheduled_mark, every="1m", args={"label": "m"})
    plans = scheduler("t.minutely")
    report = plans.step()
    assert report.leader and report.planned == 0  # 12:01 is beyond the horizon
    clock.advance("57s")
    assert plans.step().planned == 1
    assert plans.step().planned == 0  # a second pass plans nothing twice

    occurrence = Occurrence.objects.get()
    assert (occurrence.scheduled_for, occurrence.state) == (at(12, 1), "scheduled")
    assert occurrence.run_at == at(12, 1) and occurrence.last_scheduled_at == at(12, 0, 57)
    job = Job.objects.get()
    assert job.key == "occurrence:t.minutely:2026-03-01T12:01:00+00:00"
    assert (job.state, job.run_at, job.occurrence_id) == (
        JobState.SCHEDULED,
        at(12, 1),
        occurrence.id,
    )
    assert (job.concurrency_key, job.concurrency_limit) == ("schedule:t.minutely", 1)
    assert occurrence.last_job_id == job.id

    assert run_worker() == {}  # not due yet
    clock.advance("3s")
    assert run_worker() == {"done": 1}
    occurrence.refresh_from_db()
    job.refresh_from_db()
    assert occurrence.state == "completed"
    assert occurrence.attempts == 1
    assert occurrence.started_at == occurrence.completed_at == at(12, 1)
    assert occurrence.lease_expires_at is None and occurrence.lease_owner
    assert occurrence.fence == job.fence > 0
    # The body saw its occurrence: the identity as ctx.key, the instant as ctx.occurrence.
    [mark] = Mark.objects.all()
    assert (mark.label, mark.value, mark.note) == ("m@2026-03-01T12:01:00+00:00", 1, job.key)
    row = Schedule.objects.get(name="t.minutely")
    assert (row.last_success_at, row.last_success_for) == (at(12, 1), at(12, 1))


def test_one_replica_leads_and_a_deposed_leader_plans_nothing(clock, declare, scheduler):
    definition = declare("t.lead", job=scheduled_mark, every="1m")
    first, second = scheduler("t.lead"), scheduler("t.lead")
    assert first.step().leader
    assert not second.step().leader
    stale = first.fence
    clock.advance("16s")  # the leader stopped renewing for longer than SCHEDULER_LEASE
    assert second.step().leader
    assert second.fence > stale
    clock.advance("40s")  # 12:01 comes within the horizon
    row = Schedule.objects.get(name="t.lead")
    # The old leader's plan transaction finds the lease moved on and writes nothing.
    with pytest.raises(LostLeadership):
        first._plan(definition, row, clock.now(), stale)
    assert not Occurrence.objects.exists()
    assert second.step().planned == 1
    assert not first.step().leader  # the lease is renewed by its owner
    # A clean stop hands the lease on at once.
    second._resign()
    assert first.step().leader


def test_a_leader_deposed_between_its_renewal_and_its_plan_writes_nothing(
    clock, declare, scheduler, monkeypatch
):
    """The race the fence exists for: a leader renews its lease, stalls (a GC pause, a slow
    host) past SCHEDULER_LEASE while another replica takes over, then resumes its pass. Its
    plan transaction re-checks the lease under the old fence and plans nothing."""
    declare("t.race", job=scheduled_mark, every="1m")
    stalled, other = scheduler("t.race"), scheduler()  # the other replica plans nothing itself
    assert stalled.step().leader
    planned = Occurrence.objects.count()
    through = Schedule.objects.get(name="t.race").planned_through
    clock.advance("2m")  # instants are due: a pass by the leader would plan them
    real_lead = leadership.lead

    def lead_then_stall(cursor, role, **kwargs):
        fence = real_lead(cursor, role, **kwargs)
        if kwargs["owner"] == stalled.id:
            clock.advance("16s")  # the stall outlasts SCHEDULER_LEASE (15s)
            assert other.step().leader  # and the other replica takes over meanwhile
        return fence

    monkeypatch.setattr(leadership, "lead", lead_then_stall)
    report = stalled.step()
    assert (report.planned, report.skipped) == (0, 0)
    assert stalled.fence is None  # it knows it lost the lease
    assert Occurrence.objects.count() == planned
    assert Schedule.objects.get(name="t.race").planned_through == through


def test_a_sync_refreshes_the_declaration_but_never_the_operator_switch(clock, declare, scheduler):
    declare("t.sync", job=scheduled_mark, every="1h", timeout="4s")
    scheduler("t.sync").step()
    schedules.disable("t.sync", reason="incident 42", by="alice")
    declare("t.sync", job=scheduled_mark, every="2h", timeout="3s")  # a new version of the code
    scheduler("t.sync").step()
    row = Schedule.objects.get(name="t.sync")
    assert row.every == timedelta(hours=2) and row.timeout == timedelta(seconds=3)
    assert (row.enabled, row.state_reason, row.state_changed_by) == (False, "incident 42", "alice")
    declarations.unregister("t.sync")
    Scheduler(install_signals=False).step()  # a replica of every declared schedule
    assert not Schedule.objects.get(name="t.sync").declared


# Misfires ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("misfire", "ran", "skipped"),
    [
        ("skip", ["14:00"], 11),
        ("run_once", ["13:50", "14:00"], 10),
        ("run_all", ["13:30", "13:40", "13:50", "14:00"], 8),
    ],
)
def test_every_misfire_policy_after_a_downtime(
    clock, declare, scheduler, run_worker, misfire, ran, skipped
):
    declare(
        "t.downtime",
        job=scheduled_mark,
        every="10m",
        misfire=misfire,
        max_catchup=3,
        overlap="allow",
        args={"label": "d"},
    )
    plans = scheduler("t.downtime")
    plans.step()  # 12:00: synced and leading
    clock.advance("2h")  # no scheduler ran from 12:00 to 14:00
    report = plans.step()
    assert (report.planned, report.skipped) == (len(ran), skipped)

    occurrences = Occurrence.objects.order_by("scheduled_for")
    # Every instant 12:10 ... 14:00 has exactly one occurrence: none missing, none twice.
    assert hhmm(o.scheduled_for for o in occurrences) == [
        *[f"{h}:{m}0" for h in (12, 13) for m in range(6)][1:],
        "14:00",
    ]
    assert hhmm(o.scheduled_for for o in occurrences if o.state != "skipped") == ran
    for occurrence in occurrences.filter(state="skipped"):
        assert occurrence.last_job_id is None and f"misfire={misfire}" in occurrence.note
    assert run_worker() == {"done": len(ran)}
    assert sorted(Mark.objects.values_list("label", flat=True)) == [
        f"d@2026-03-01T{hm}:00+00:00" for hm in ran
    ]
    assert set(occurrences.exclude(state="skipped").values_list("state", flat=True)) == {
        "completed"
    }


def test_catch_up_stays_bounded_after_a_long_downtime_of_a_per_second_schedule(
    clock, declare, scheduler
):
    declare("t.seconds", job=scheduled_mark, every="1s", misfire="run_all", max_catchup=5)
    plans = scheduler("t.seconds")
    assert plans.step().planned == 5  # the horizon: 12:00:01 ... 12:00:05
    clock.advance("1d")  # 86,400 missed instants
    report = plans.step()
    assert report.planned == 5 + 66  # five caught up, then the grace (60s) and horizon (5s)
    assert report.skipped == 100  # the most recent skipped ones are recorded; older are not
    assert Job.objects.count() == 5 + 71
    clock.advance("1s")
    assert plans.step().planned == 1  # back to one a second


# Overlap -----------------------------------------------------------------------------------


def overlapping_runs() -> int:
    """How many runs started while another was running (from marks in commit order)."""
    running = overlaps = 0
    for label in Mark.objects.order_by("id").values_list("label", flat=True):
        if label.endswith(":start"):
            overlaps += running > 0
            running += 1
        else:
            running -= 1
    return overlaps


@pytest.mark.parametrize(("overlap", "overlapped"), [("forbid", False), ("allow", True)])
def test_overlap_forbid_never_lets_two_occurrences_run_at_once(
    clock, declare, scheduler, run_worker, overlap, overlapped
):
    declare(
        "t.overlap",
        job=occupied,
        every="1m",
        misfire="run_all",
        max_catchup=4,
        overlap=overlap,
        args={"label": "o", "seconds": 0.15},
    )
    plans = scheduler("t.overlap")
    plans.step()
    clock.advance("10m")
    assert plans.step().planned == 6  # four caught up and two on time, all due at once
    assert set(Job.objects.values_list("concurrency_key", "concurrency_limit")) == (
        {("schedule:t.overlap", 1)} if overlap == "forbid" else {(None, None)}
    )
    done = 0
    for _ in range(12):  # four threads, six due jobs: only the limit keeps them from overlapping
        done += run_worker(concurrency=4).get("done", 0)
        if done == 6:
            break
    assert done == 6 and Mark.objects.count() == 12
    assert (overlapping_runs() > 0) is overlapped


# Jitter ------------------------------------------------------------------------------------


def test_jitter_delays_each_run_deterministically_and_keeps_the_nominal_identity(
    clock, declare, scheduler
):
    declare("t.jitter", job=scheduled_mark, every="1m", jitter="30s")
    plans = scheduler("t.jitter")
    plans.step()
    for _ in range(12):
        clock.advance("1m")
        plans.step()
    occurrences = list(Occurrence.objects.order_by("scheduled_for"))
    assert len(occurrences) == 12
    delays = []
    for occurrence in occurrences:
        assert occurrence.scheduled_for.second == 0  # the identity is the nominal instant
        delay = occurrence.run_at - occurrence.scheduled_for
        assert timedelta(0) <= delay < timedelta(seconds=30)
        assert delay == jitter_for("t.jitter", occurrence.scheduled_for, timedelta(seconds=30))
        job = Job.objects.get(pk=occurrence.last_job_id)
        assert job.run_at == occurrence.run_at
        assert job.key.endswith(occurrence.scheduled_for.isoformat())
        delays.append(delay)
    assert len(set(delays)) > 6


# Fences ------------------------------------------------------------------------------------


def test_a_completion_with_a_stale_fence_changes_neither_job_nor_occurrence(
    clock, declare, scheduler
):
    declare("t.fence", job=scheduled_mark, every="1m")
    plans = scheduler("t.fence")
    plans.step()
    clock.advance("1m")
    plans.step()
    [stale] = claim(clock, owner="worker-a")
    occurrence = Occurrence.objects.get()
    assert (occurrence.state, occurrence.fence, occurrence.lease_owner) == (
        "processing",
        stale.fence,
        "worker-a",
    )
    # Worker A is cut off; its lease lapses and worker B claims the occurrence again.
    Job.objects.filter(pk=stale.id).update(state=JobState.FAILED, lease_expires_at=None)
    [current] = claim(clock, owner="worker-b")
    assert current.fence > stale.fence
    with connection.cursor() as cursor:
        assert not transitions.complete(cursor, stale, now=clock.now(), result_json=None)
    occurrence.refresh_from_db()
    job = Job.objects.get()
    assert (job.state, job.fence) == (JobState.RUNNING, current.fence)
    assert (occurrence.state, occurrence.fence, occurrence.completed_at) == (
        "processing",
        current.fence,
        None,
    )
    assert occurrence.lease_owner == "worker-b" and occurrence.attempts == 2
    assert Schedule.objects.get(name="t.fence").last_success_at is None
    with connection.cursor() as cursor:
        assert transitions.complete(cursor, current, now=clock.now(), result_json=None)
    occurrence.refresh_from_db()
    assert (occurrence.state, occurrence.completed_at) == ("completed", clock.now())
    # Nothing may lower an occurrence's fence, whoever writes.
    with (
        pytest.raises(psycopg.errors.CheckViolation, match="cannot decrease"),
        connect("default") as other,
    ):
        other.execute(
            "UPDATE litejobs_occurrence SET fence = fence - 1 WHERE id = %s", [occurrence.id]
        )


# Retries and dead letters ------------------------------------------------------------------


def test_an_occurrence_retries_with_the_schedules_policy_then_is_dead_lettered(
    clock, declare, scheduler, run_worker
):
    declare(
        "t.failing",
        job=scheduled_mark,
        every="1h",
        retry=Retry(attempts=2, backoff="fixed", base="10s", jitter="none"),
        timeout="2s",
        args={"label": "f", "fail": True},
    )
    plans = scheduler("t.failing")
    plans.step()
    clock.advance("1h")
    plans.step()
    job = Job.objects.get()
    assert job.max_attempts == 2  # the schedule's retry, not the job's (3 by default)
    assert run_worker() == {"failed": 1}
    occurrence = Occurrence.objects.get()
    assert (occurrence.state, occurrence.attempts) == ("scheduled", 1)
    assert occurrence.error_class == "builtins.RuntimeError"
    assert "scheduled failure" in occurrence.error_message
    assert occurrence.run_at == at(13, 0, 10)  # the retry's time
    clock.advance("10s")
    assert run_worker() == {"dead": 1}
    occurrence.refresh_from_db()
    assert (occurrence.state, occurrence.attempts, occurrence.completed_at) == (
        "dead_letter",
        2,
        None,
    )
    assert occurrence.finished_at == clock.now()
    assert Schedule.objects.get(name="t.failing").last_success_at is None


def test_an_occurrence_runs_with_its_schedules_timeout(declare):
    definition = declare("t.timeout", job=scheduled_mark, every="1h", timeout="2s")
    assert scheduled_mark.timeout == timedelta(seconds=5)
    assert definition.run_definition.timeout == timedelta(seconds=2)
    claimed = claims.ClaimedJob.from_row(
        {
            "id": 1,
            "name": scheduled_mark.name,
            "queue": "default",
            "key": "occurrence:t.timeout:2026-03-01T12:00:00+00:00",
            "tenant": "",
            "payload": {},
            "attempts": 1,
            "max_attempts": 3,
            "fence": 7,
            "traceparent": "",
            "occurrence_id": 5,
            "version": 1,
            "module": "tests.testapp.jobs",
        }
    )
    run = catalog.run_of(claimed)
    assert run.occurrence.scheduled_for == NOON
    assert run.definition.timeout == timedelta(seconds=2)


# Manual replay -----------------------------------------------------------------------------


def test_a_manual_replay_keeps_the_instant_and_adds_an_audited_attempt(
    clock, declare, scheduler, run_worker
):
    declare("t.replay", job=scheduled_mark, every="1h", args={"label": "r"})
    plans = scheduler("t.replay")
    plans.step()
    clock.advance("1h")
    plans.step()
    run_worker()
    occurrence = Occurrence.objects.get()
    first_job = occurrence.last_job_id
    assert occurrence.state == "completed"
    # The occurrence's job is not retried behind its identity's back.
    with pytest.raises(TransitionRefused) as refused:
        operations.retry(first_job, by="alice")
    assert refused.value.code == "retry-refused" and f"replay {occurrence.id}" in str(refused.value)

    clock.advance("5m")
    outcome = schedules.replay(occurrence.id, reason="ledger was repaired", by="alice")
    occurrence.refresh_from_db()
    assert (occurrence.state, occurrence.replays, occurrence.scheduled_for) == (
        "scheduled",
        1,
        at(13, 0),
    )
    assert occurrence.last_job_id == outcome.job_id != first_job
    [audit] = OccurrenceReplay.objects.all()
    assert (audit.requested_by, audit.requested_at, audit.reason) == (
        "alice",
        clock.now(),
        "ledger was repaired",
    )
    assert (audit.job_id, audit.previous_state) == (outcome.job_id, "completed")
    jobs = list(Job.objects.filter(occurrence=occurrence).order_by("id"))
    assert len({job.key for job in jobs}) == 1  # one identity, two attempts

    # A second replay while this one is live would run the occurrence twice: refused.
    with pytest.raises(TransitionRefused) as refused:
        schedules.replay(occurrence.id, reason="again", by="bob")
    assert refused.value.code == "replay-refused"

    assert run_worker() == {"done": 1}
    occurrence.refresh_from_db()
    assert (occurrence.state, occurrence.attempts, occurrence.completed_at) == (
        "completed",
        2,
        clock.now(),
    )
    assert list(Mark.objects.order_by("id").values_list("label", "value")) == [
        ("r@2026-03-01T13:00:00+00:00", 1),
        ("r@2026-03-01T13:00:00+00:00", 1),
    ]


def test_a_replay_needs_a_reason_and_an_existing_occurrence(clock, declare, scheduler):
    declare("t.replay2", job=scheduled_mark, every="1h")
    with pytest.raises(InvalidInput) as missing:
        schedules.replay(1, reason="  ", by="alice")
    assert missing.value.code == "reason-required"
    with pytest.raises(OccurrenceNotFound):
        schedules.replay(999, reason="why", by="alice")


def test_a_skipped_occurrence_can_be_replayed(clock, declare, scheduler, run_worker):
    declare("t.skipped", job=scheduled_mark, every="10m", misfire="skip", args={"label": "s"})
    plans = scheduler("t.skipped")
    plans.step()
    clock.advance("1h")
    plans.step()
    missed = Occurrence.objects.filter(state="skipped").order_by("scheduled_for").first()
    schedules.replay(missed.id, reason="the 12:10 run was needed", by="alice")
    run_worker()
    missed.refresh_from_db()
    assert (missed.state, missed.scheduled_for, missed.replays) == ("completed", at(12, 10), 1)


# Disable / enable --------------------------------------------------------------------------


def test_disable_stops_new_occurrences_and_a_claimed_one_finishes(
    clock, declare, scheduler, run_worker
):
    declare("t.switch", job=scheduled_mark, every="1m", args={"label": "w"})
    plans = scheduler("t.switch")
    plans.step()
    clock.advance("1m")
    plans.step()  # 12:01 (due now) and nothing else within the horizon
    [claimed] = claim(clock)  # a worker holds the 12:01 occurrence
    clock.advance("56s")
    plans.step()  # 12:02 planned ahead, not started
    outcome = schedules.disable("t.switch", reason="upstream outage", by="alice")
    assert outcome.skipped == 1
    states = dict(Occurrence.objects.values_list("scheduled_for", "state"))
    assert states == {at(12, 1): "processing", at(12, 2): "skipped"}
    assert "upstream outage" in Occurrence.objects.get(scheduled_for=at(12, 2)).note
    assert Job.objects.get(occurrence__scheduled_for=at(12, 2)).state == JobState.CANCELLED

    # The claimed occurrence finishes.
    with connection.cursor() as cursor:
        assert transitions.complete(cursor, claimed, now=clock.now(), result_json=None)
    assert Occurrence.objects.get(scheduled_for=at(12, 1)).state == "completed"

    clock.advance("1h")
    assert plans.step().planned == 0  # disabled: nothing new, nothing caught up
    assert Occurrence.objects.count() == 2
    assert health(Schedule.objects.get(name="t.switch"), clock.now()).overdue is False

    schedules.enable("t.switch", by="bob")
    clock.advance("1m")
    plans.step()
    # Planning resumes from the enable; the hour it was disabled is not caught up.
    assert hhmm(
        Occurrence.objects.order_by("scheduled_for").values_list("scheduled_for", flat=True)
    ) == ["12:01", "12:02", "13:02", "13:03"]
    row = Schedule.objects.get(name="t.switch")
    assert (row.enabled, row.state_changed_by) == (True, "bob")


def test_an_operator_cancel_of_an_unstarted_occurrence_skips_it(clock, declare, scheduler):
    declare("t.cancel", job=scheduled_mark, every="1m")
    plans = scheduler("t.cancel")
    plans.step()
    clock.advance("58s")
    plans.step()
    occurrence = Occurrence.objects.get()
    operations.cancel(occurrence.last_job_id, by="alice")
    occurrence.refresh_from_db()
    assert occurrence.state == "skipped" and "cancelled" in occurrence.note


# Retention ---------------------------------------------------------------------------------


def test_retention_purges_finished_occurrences_past_each_schedules_retention(
    clock, declare, scheduler, run_worker
):
    declare("t.short", job=scheduled_mark, every="1h", retention="1d", args={"label": "a"})
    declare("t.long", job=scheduled_mark, every="1h", retention="7d", args={"label": "b"})
    plans = scheduler("t.short", "t.long")
    plans.step()
    for _ in range(2):  # 13:00 and 14:00 run and complete
        clock.advance("1h")
        plans.step()
        run_worker()
    clock.advance(timedelta(minutes=59, seconds=57))
    plans.step()  # 15:00 is planned, not run: a live occurrence is never purged
    first = Occurrence.objects.get(schedule__name="t.short", scheduled_for=at(13, 0))
    schedules.replay(first.id, reason="audit me", by="alice")
    run_worker()
    assert OccurrenceReplay.objects.count() == 1

    clock.set(at(16, 0) + timedelta(days=1))
    assert purge_occurrences() == {"t.short": 2}
    remaining = Occurrence.objects.filter(schedule__name="t.short")
    assert [(o.scheduled_for, o.state) for o in remaining] == [(at(15, 0), "scheduled")]
    assert Occurrence.objects.filter(schedule__name="t.long").count() == 3
    assert not OccurrenceReplay.objects.exists()  # the audit went with its occurrence
    # Their jobs stay until the jobs' own retention; the dangling link harms nothing.
    assert Job.objects.filter(name=scheduled_mark.name, state=JobState.DONE).count() == 5


def test_the_built_in_housekeeping_job_purges_occurrences_and_jobs(
    clock, declare, scheduler, run_worker
):
    from litejobs.scheduling.housekeeping import housekeeping

    declare("t.kept", job=scheduled_mark, every="1h", retention="1d")
    plans = scheduler("t.kept")
    plans.step()
    clock.advance("1h")
    plans.step()
    run_worker()
    clock.advance("10d")
    housekeeping.enqueue()
    assert run_worker() == {"done": 1}
    done = Job.objects.get(name=housekeeping.name)
    assert done.result["occurrences"] == {"t.kept": 1}
    assert done.result["jobs"]["done"] == 1  # the occurrence's job, past the 7d job retention
    assert not Occurrence.objects.exists()
    assert declarations.get("litejobs.housekeeping").timeout < timedelta(seconds=60)
