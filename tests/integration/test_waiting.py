"""Why a job waits: each reason from a real condition in the database, as the claim reads it."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from litejobs.jobs import claims, queues
from litejobs.jobs.waiting import AHEAD_CAP, WaitCode, explain, explain_one
from litejobs.models import Job, JobState
from tests.factories import JobFactory, ReleasedJobFactory, WorkerFactory

pytestmark = pytest.mark.django_db


def why(job):
    job.refresh_from_db()
    return explain_one(job)


def test_running_and_finished_jobs_wait_for_nothing(clock):
    WorkerFactory()
    for state in (JobState.RUNNING, JobState.DONE, JobState.DEAD, JobState.CANCELLED):
        assert why(JobFactory(state=state, label=state)) is None


def test_a_scheduled_job_is_not_due_until_its_run_at(clock):
    WorkerFactory()
    job = JobFactory(state=JobState.SCHEDULED, run_at=clock.now() + timedelta(minutes=5))
    reason = why(job)
    assert reason.code == WaitCode.NOT_DUE
    assert reason.until == job.run_at
    assert reason.message == "Not due until 2026-03-01 12:05:00 (in 5m)."
    assert reason.as_json()["until"] == "2026-03-01T12:05:00+00:00"


def test_a_failed_job_waits_for_its_retry_after_the_attempt_that_failed(clock):
    WorkerFactory()
    job = JobFactory(
        state=JobState.FAILED, attempts=2, max_attempts=5, error_class="builtins.ValueError"
    )
    reason = why(job)
    assert (reason.code, reason.attempt, reason.max_attempts) == (WaitCode.RETRY_PENDING, 2, 5)
    assert reason.until == job.run_at
    assert "attempt 2 of 5 failed (builtins.ValueError)" in reason.message
    assert "2026-03-01 13:00:00 (in 1h)" in reason.message


def test_a_job_waiting_in_a_step_says_until_when(clock):
    WorkerFactory()
    job = JobFactory(state=JobState.WAITING, run_at=clock.now() + timedelta(hours=2))
    reason = why(job)
    assert (reason.code, reason.until) == (WaitCode.STEP_WAITING, job.run_at)


def test_a_paused_queue_holds_its_jobs_and_says_who_paused_it_and_why(clock):
    WorkerFactory()
    job = JobFactory(state=JobState.READY)
    queues.pause("default", reason="database migration", by="ann")
    reason = why(job)
    assert reason.code == WaitCode.QUEUE_PAUSED
    assert (reason.paused_by, reason.reason, reason.paused_at) == (
        "ann",
        "database migration",
        clock.now(),
    )
    assert "ann paused it at 2026-03-01 12:00:00" in reason.message
    queues.resume("default", by="ann")
    assert why(job).code == WaitCode.NEXT_IN_LINE


def test_a_due_job_no_live_worker_serves_waits_for_one(clock):
    job = JobFactory(state=JobState.READY)
    assert why(job).code == WaitCode.NO_WORKER  # no worker row at all
    WorkerFactory(queues=["emails"])
    assert why(job).code == WaitCode.NO_WORKER  # a worker of another queue
    WorkerFactory(lease_expires_at=clock.now() - timedelta(seconds=1))
    assert why(job).code == WaitCode.NO_WORKER  # a worker whose lease lapsed
    WorkerFactory(stopping=True)
    assert why(job).code == WaitCode.NO_WORKER  # a worker draining to stop
    WorkerFactory(queues=["emails", "default"])
    assert why(job).code == WaitCode.NEXT_IN_LINE


@pytest.mark.parametrize("served", [[], ["*"]])
def test_a_worker_with_no_queue_list_serves_every_queue(clock, served):
    WorkerFactory(queues=served)
    assert why(JobFactory(state=JobState.READY, queue="reports")).code == WaitCode.NEXT_IN_LINE


def test_a_full_concurrency_key_names_its_holders(clock):
    WorkerFactory()
    limited = {"concurrency_key": "tenant:7", "concurrency_limit": 2}
    holders = [JobFactory(state=JobState.RUNNING, label=f"h{i}", **limited) for i in range(2)]
    job = JobFactory(state=JobState.READY, label="w", **limited)
    reason = why(job)
    assert reason.code == WaitCode.CONCURRENCY_FULL
    assert reason.holders == tuple(h.id for h in holders)
    assert (reason.concurrency_key, reason.concurrency_limit) == ("tenant:7", 2)
    assert f"2 of 2 running (#{holders[0].id}, #{holders[1].id})" in reason.message
    Job.objects.filter(pk=holders[0].pk).update(
        state=JobState.DONE, finished_at=clock.now(), lease_expires_at=None
    )
    freed = why(job)
    assert (freed.code, freed.ahead, freed.holders) == (
        WaitCode.NEXT_IN_LINE,
        0,
        (holders[1].id,),
    )


@pytest.mark.django_db(transaction=True)
def test_a_job_handed_back_as_unknown_says_which_worker_saw_it(clock, run_worker):
    WorkerFactory()
    row = ReleasedJobFactory(name="release.added")
    assert run_worker() == {"handed_back": 1}
    reason = why(row)
    row.refresh_from_db()
    assert reason.code == WaitCode.HANDED_BACK
    assert (reason.handed_back_at, reason.until) == (clock.now(), row.run_at)
    assert reason.handed_back_by == row.lease_owner != ""
    assert row.lease_owner in reason.message
    assert "2026-03-01 13:00:00 (in 1h)" in reason.message  # dead after UNKNOWN_JOB_GRACE


def test_next_in_line_counts_what_the_claim_takes_first(clock):
    WorkerFactory()
    low = JobFactory(state=JobState.READY, label="low", priority=0)
    high = JobFactory(state=JobState.READY, label="high", priority=5)
    later = JobFactory(state=JobState.READY, label="later", run_at=clock.now() + timedelta(0))
    JobFactory(state=JobState.READY, label="other queue", queue="emails", priority=50)
    JobFactory(state=JobState.SCHEDULED, label="not due", priority=50)
    found = explain(Job.objects.filter(pk__in=[low.pk, high.pk, later.pk]))
    assert {job.pk: found[job.pk].ahead for job in (high, low, later)} == {
        high.pk: 0,
        low.pk: 1,
        later.pk: 2,
    }
    assert found[high.pk].message == (
        "Due and next in line of its queue 'default': the next claim takes it."
    )
    assert "2 due job(s) of its queue 'default' go before it" in found[later.pk].message
    [taken] = _claim_one()
    assert taken.id == high.pk  # the one said to be next is the one the claim takes


def _claim_one():
    with connection.cursor() as cursor:
        return claims.claim(
            cursor.cursor,
            owner="w",
            queues=["default"],
            limit=1,
            now=clock_now(),
            lease=timedelta(minutes=1),
        ).jobs


def clock_now():
    from litejobs import clock

    return clock.now()


def test_the_count_ahead_is_capped(clock, monkeypatch):
    from litejobs.jobs import waiting

    monkeypatch.setattr(waiting, "AHEAD_CAP", 3)
    WorkerFactory()
    jobs = [JobFactory(state=JobState.READY, label=str(i)) for i in range(5)]
    reason = why(jobs[-1])
    assert reason.ahead == 3
    assert "more than 3 due job(s)" in reason.message
    assert AHEAD_CAP == 1000


def test_a_page_of_jobs_costs_the_same_few_queries_whatever_its_size(clock):
    WorkerFactory()
    queues.pause("paused", reason="r", by="ann")

    def page(size):
        Job.objects.all().delete()
        for i in range(size):
            JobFactory(state=JobState.READY, label=f"r{i}")
            JobFactory(state=JobState.SCHEDULED, label=f"s{i}")
            JobFactory(state=JobState.READY, label=f"p{i}", queue="paused")
            JobFactory(
                state=JobState.READY, label=f"l{i}", concurrency_key="k", concurrency_limit=1
            )
            JobFactory(state=JobState.DONE, label=f"d{i}")
        jobs = list(Job.objects.all())
        with CaptureQueriesContext(connection) as queries:
            found = explain(jobs)
        assert len(found) == 4 * size
        return len(queries)

    assert page(2) == page(25) == 4
