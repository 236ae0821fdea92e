"""Why a job waits: each reason from a real condition in the database, as the claim reads it."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from litejobs.jobs import claims, queues
from litejobs.jobs.holdups import AHEAD_CAP, HoldUpCode, holdup_of, holdups_of
from litejobs.models import CLAIMABLE, Job, JobState, StepState
from tests.factories import (
    JobFactory,
    JobStepFactory,
    ReleasedJobFactory,
    UserFactory,
    WorkerFactory,
)
from tests.testapp.jobs import charge_once

pytestmark = pytest.mark.django_db


def why(job):
    job.refresh_from_db()
    return holdup_of(job)


def test_running_and_finished_jobs_wait_for_nothing(clock):
    WorkerFactory()
    for state in (JobState.RUNNING, JobState.DONE, JobState.DEAD, JobState.CANCELLED):
        assert why(JobFactory(state=state, label=state)) is None


def test_a_scheduled_job_is_not_due_until_its_run_at(clock):
    WorkerFactory()
    job = JobFactory(state=JobState.SCHEDULED, run_at=clock.now() + timedelta(minutes=5))
    reason = why(job)
    assert reason.code == HoldUpCode.NOT_DUE
    assert reason.until == job.run_at
    assert reason.message == "Not due until 12:05:00 UTC (in 5m)."
    assert reason.as_json()["until"] == "2026-03-01T12:05:00+00:00"


def test_a_failed_job_waits_for_its_retry_after_the_attempt_that_failed(clock):
    WorkerFactory()
    job = JobFactory(
        state=JobState.FAILED, attempts=2, max_attempts=5, error_class="builtins.ValueError"
    )
    reason = why(job)
    assert (reason.code, reason.attempt, reason.max_attempts) == (HoldUpCode.RETRY_PENDING, 2, 5)
    assert reason.until == job.run_at
    assert "attempt 2 of 5 failed (builtins.ValueError)" in reason.message
    assert "13:00:00 UTC (in 1h)" in reason.message


def test_a_job_waiting_in_a_step_says_until_when(clock):
    WorkerFactory()
    job = JobFactory(state=JobState.WAITING, run_at=clock.now() + timedelta(hours=2))
    reason = why(job)
    assert (reason.code, reason.until) == (HoldUpCode.STEP_WAITING, job.run_at)


def test_a_paused_queue_holds_its_jobs_and_says_who_paused_it_and_why(clock):
    WorkerFactory()
    job = JobFactory(state=JobState.READY)
    queues.pause("default", reason="database migration", by="ann")
    reason = why(job)
    assert reason.code == HoldUpCode.QUEUE_PAUSED
    assert (reason.paused_by, reason.reason, reason.paused_at) == (
        "ann",
        "database migration",
        clock.now(),
    )
    assert "ann paused it at 12:00:00 UTC" in reason.message
    queues.resume("default", by="ann")
    assert why(job).code == HoldUpCode.NEXT_IN_LINE


def test_a_due_job_no_live_worker_serves_waits_for_one(clock):
    job = JobFactory(state=JobState.READY)
    assert why(job).code == HoldUpCode.NO_WORKER  # no worker row at all
    WorkerFactory(queues=["emails"])
    assert why(job).code == HoldUpCode.NO_WORKER  # a worker of another queue
    WorkerFactory(lease_expires_at=clock.now() - timedelta(seconds=1))
    assert why(job).code == HoldUpCode.NO_WORKER  # a worker whose lease lapsed
    WorkerFactory(stopping=True)
    assert why(job).code == HoldUpCode.NO_WORKER  # a worker draining to stop
    WorkerFactory(queues=["emails", "default"])
    assert why(job).code == HoldUpCode.NEXT_IN_LINE


@pytest.mark.parametrize("served", [[], ["*"]])
def test_a_worker_with_no_queue_list_serves_every_queue(clock, served):
    WorkerFactory(queues=served)
    assert why(JobFactory(state=JobState.READY, queue="reports")).code == HoldUpCode.NEXT_IN_LINE


def test_a_full_concurrency_key_names_its_holders(clock):
    WorkerFactory()
    limited = {"concurrency_key": "tenant:7", "concurrency_limit": 2}
    holders = [JobFactory(state=JobState.RUNNING, label=f"h{i}", **limited) for i in range(2)]
    job = JobFactory(state=JobState.READY, label="w", **limited)
    reason = why(job)
    assert reason.code == HoldUpCode.CONCURRENCY_FULL
    assert reason.holders == tuple(h.id for h in holders)
    assert (reason.concurrency_key, reason.concurrency_limit) == ("tenant:7", 2)
    assert f"2 of 2 running (#{holders[0].id}, #{holders[1].id})" in reason.message
    Job.objects.filter(pk=holders[0].pk).update(
        state=JobState.DONE, finished_at=clock.now(), lease_expires_at=None
    )
    freed = why(job)
    assert (freed.code, freed.ahead, freed.holders) == (
        HoldUpCode.NEXT_IN_LINE,
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
    assert reason.code == HoldUpCode.HANDED_BACK
    assert (reason.handed_back_at, reason.until) == (clock.now(), row.run_at)
    assert reason.handed_back_by == row.lease_owner != ""
    assert row.lease_owner in reason.message
    assert "13:00:00 UTC (in 1h)" in reason.message  # dead after UNKNOWN_JOB_GRACE


@pytest.mark.django_db(transaction=True)
def test_a_handed_back_job_says_tried_again_only_once_it_was(clock, run_worker):
    WorkerFactory()
    row = ReleasedJobFactory(name="release.added")
    run_worker()
    reason = why(row)
    assert "tried again" not in reason.message.lower()
    assert "It is due again at 12:00:01 UTC (in 1s)" in reason.message
    clock.advance("5s")
    reason = why(row)
    assert "tried again" not in reason.message.lower()
    assert "Due again since 12:00:01 UTC (4s ago)" in reason.message
    assert "the first hand-back, at 12:00:00 UTC" in reason.message


def test_next_in_line_says_when_every_worker_thread_is_busy(clock):
    busy = WorkerFactory(concurrency=2, in_flight=[901, 902])
    job = JobFactory(state=JobState.READY)
    reason = why(job)
    assert (reason.code, reason.ahead, reason.free_threads) == (HoldUpCode.NEXT_IN_LINE, 0, 0)
    assert "Every thread of the live workers serving its queue is busy" in reason.message
    assert reason.summary == "Next in line, every worker thread busy"
    busy.in_flight = [901]
    busy.save()
    reason = why(job)
    assert reason.free_threads == 1 and "busy" not in reason.message
    WorkerFactory(queues=["emails"], concurrency=4)  # serves another queue: no help
    busy.in_flight = [901, 902]
    busy.save()
    assert why(job).free_threads == 0


@pytest.mark.django_db(transaction=True)
def test_a_job_held_for_an_operator_says_so_with_its_resolve_step_command(clock, run_worker):
    job = Job.objects.get(pk=charge_once.enqueue(label="h").id)
    JobStepFactory(job=job, name="charge", state=StepState.STARTED, once=True, executions=1)
    assert run_worker() == {"held": 1}
    reason = why(job)
    assert reason.code == HoldUpCode.HELD_FOR_OPERATOR
    assert (reason.steps, reason.until) == (("charge",), None)
    assert reason.action == f"manage.py litejobs resolve-step {job.id} charge --ran|--not-ran"
    assert f"`manage.py litejobs resolve-step {job.id} charge --ran` (or `--not-ran`)" in (
        reason.message
    )
    assert "9999" not in reason.message + reason.summary
    assert reason.summary == "Held for an operator: step 'charge', outcome unknown"
    data = json.loads(show(str(job.id), "--json"))["waiting"]
    assert (data["code"], data["steps"]) == ("held-for-operator", ["charge"])
    queues.pause("default", reason="incident", by="ann")  # the operator is still what it needs
    assert why(job).code == HoldUpCode.HELD_FOR_OPERATOR


def test_next_in_line_counts_what_the_claim_takes_first(clock):
    WorkerFactory()
    low = JobFactory(state=JobState.READY, label="low", priority=0)
    high = JobFactory(state=JobState.READY, label="high", priority=5)
    later = JobFactory(state=JobState.READY, label="later", run_at=clock.now() + timedelta(0))
    JobFactory(state=JobState.READY, label="other queue", queue="emails", priority=50)
    JobFactory(state=JobState.SCHEDULED, label="not due", priority=50)
    found = holdups_of(Job.objects.filter(pk__in=[low.pk, high.pk, later.pk]))
    assert {job.pk: found[job.pk].ahead for job in (high, low, later)} == {
        high.pk: 0,
        low.pk: 1,
        later.pk: 2,
    }
    assert found[high.pk].message == (
        "Due and next in line of its queue 'default': the next claim takes it."
    )
    assert "2 due jobs of its queue 'default' go before it" in found[later.pk].message
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
    from litejobs.jobs import holdups

    monkeypatch.setattr(holdups, "AHEAD_CAP", 3)
    WorkerFactory()
    jobs = [JobFactory(state=JobState.READY, label=str(i)) for i in range(5)]
    reason = why(jobs[-1])
    assert reason.ahead == 3
    assert "more than 3 due jobs" in reason.message
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
            found = holdups_of(jobs)
        assert len(found) == 4 * size
        return len(queries)

    assert page(2) == page(25) == 4


# manage.py litejobs show ---------------------------------------------------------------------


def show(*args):
    out = StringIO()
    call_command("litejobs", "show", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_show_answers_why_a_job_waits_and_null_once_it_runs(clock):
    job = JobFactory(state=JobState.READY)
    queues.pause("default", reason="database migration", by="ann")
    data = json.loads(show(str(job.id), "--json"))
    assert data["waiting"]["code"] == "queue-paused"
    assert (data["waiting"]["paused_by"], data["waiting"]["reason"]) == (
        "ann",
        "database migration",
    )
    assert data["waiting"]["paused_at"] == "2026-03-01T12:00:00+00:00"
    text = show(str(job.id))
    assert "waiting because    Its queue 'default' is paused: ann paused it" in text

    running = JobFactory(state=JobState.RUNNING, label="running")
    assert json.loads(show(str(running.id), "--json"))["waiting"] is None
    assert "waiting because" not in show(str(running.id))


# The admin -----------------------------------------------------------------------------------

JOBS = reverse("admin:litejobs_job_changelist")


def _page_of_every_reason(clock, copies):
    for i in range(copies):
        JobFactory(state=JobState.READY, label=f"r{i}")
        JobFactory(state=JobState.SCHEDULED, label=f"s{i}")
        JobFactory(state=JobState.FAILED, label=f"f{i}", error_class="builtins.ValueError")
        JobFactory(state=JobState.READY, label=f"p{i}", queue="paused")
        JobFactory(state=JobState.READY, label=f"n{i}", queue="nobody")
        JobFactory(state=JobState.READY, label=f"l{i}", concurrency_key="k", concurrency_limit=1)
        JobFactory(state=JobState.RUNNING, label=f"h{i}", concurrency_key="k", concurrency_limit=1)
        JobFactory(state=JobState.DONE, label=f"d{i}")


def test_the_listing_says_why_each_job_waits_in_the_same_queries_whatever_the_rows(
    admin_client, clock
):
    WorkerFactory(queues=["default", "paused"])
    queues.pause("paused", reason="database migration", by="ann")

    def listing(copies):
        Job.objects.all().delete()
        _page_of_every_reason(clock, copies)
        with CaptureQueriesContext(connection) as queries:
            response = admin_client.get(JOBS)
        assert response.status_code == 200
        return response, len(queries)

    _, few = listing(1)
    large, many = listing(6)  # 48 rows: one page
    assert few == many
    rows = large.context["cl"].result_list
    assert len(rows) == 48
    codes = {job._litejobs_holdup.code for job in rows if job.state in CLAIMABLE}
    assert codes == {
        HoldUpCode.NEXT_IN_LINE,
        HoldUpCode.NOT_DUE,
        HoldUpCode.RETRY_PENDING,
        HoldUpCode.QUEUE_PAUSED,
        HoldUpCode.NO_WORKER,
        HoldUpCode.CONCURRENCY_FULL,
    }
    content = large.content.decode()
    assert "Queue paused by ann: database migration" in content
    assert "Concurrency key &#x27;k&#x27; full" in content
    assert "No live worker serves queue &#x27;nobody&#x27;" in content
    assert 'class="litejobs-state litejobs-state-done"' in content


def test_the_listing_shows_the_current_error_in_one_short_line(admin_client, clock):
    JobFactory(
        state=JobState.DEAD,
        error_class="builtins.ValueError",
        error_message="card declined " + "x" * 200 + "\nsecond line",
    )
    JobFactory(
        state=JobState.DONE, label="ok", error_class="builtins.KeyError", error_message="old"
    )
    content = admin_client.get(JOBS).content.decode()
    assert "ValueError: card declined xxx" in content
    assert "x" * 100 not in content  # cut short
    assert "second line" not in content
    assert "KeyError" not in content  # a done job has no current error


def test_an_empty_listing_says_what_the_filter_was(admin_client, clock):
    JobFactory(state=JobState.READY)
    content = " ".join(admin_client.get(JOBS, {"state__exact": "dead"}).content.decode().split())
    assert "No job matches state: Dead." in content
    assert "0 jobs" not in content
    content = " ".join(admin_client.get(JOBS, {"q": "nothing-like-this"}).content.decode().split())
    assert "No job matches search: nothing-like-this." in content


def page(job):
    return reverse("admin:litejobs_job_change", args=[job.pk])


def button(job, verb):
    return reverse("admin:litejobs_job_act", args=[job.pk, verb])


def test_the_job_page_opens_with_its_state_why_it_waits_and_its_error(admin_client, clock):
    WorkerFactory()
    job = JobFactory(
        state=JobState.FAILED,
        attempts=1,
        max_attempts=3,
        error_class="builtins.ValueError",
        error_message="card declined\nTraceback detail",
        error_traceback="Traceback (most recent call last): ...",
    )
    content = admin_client.get(page(job)).content.decode()
    summary = content.index('id="job-summary"')
    assert summary < content.index("<fieldset")
    assert 'class="litejobs-state litejobs-state-failed"' in content[summary:]
    waiting = content.index('id="job-waiting"')
    assert "Waiting for its retry at 13:00:00 UTC (in 1h)" in content[waiting:]
    assert "ValueError: card declined" in content[content.index('id="job-error"') :]
    assert content.count("<details") >= 3  # payload, error and lease folded away
    for verb in ("retry", "promote", "cancel"):
        assert f'id="job-{verb}"' in content


def test_the_job_page_buttons_retry_cancel_and_run_now(admin_client, clock):
    dead = JobFactory(state=JobState.DEAD, label="dead")
    response = admin_client.post(button(dead, "retry"), follow=True)
    assert response.redirect_chain[-1][0] == page(dead)
    dead.refresh_from_db()
    assert dead.state == JobState.READY
    assert any(
        "retried" in str(m).lower() or "ready" in str(m).lower()
        for m in response.context["messages"]
    )

    scheduled = JobFactory(state=JobState.SCHEDULED, label="later")
    admin_client.post(button(scheduled, "promote"))
    scheduled.refresh_from_db()
    assert (scheduled.state, scheduled.run_at) == (JobState.SCHEDULED, clock.now())
    content = admin_client.get(page(scheduled)).content.decode()
    assert 'id="job-promote"' not in content  # due already: nothing to run sooner
    assert 'id="job-cancel"' in content

    admin_client.post(button(scheduled, "cancel"))
    scheduled.refresh_from_db()
    assert scheduled.state == JobState.CANCELLED

    done = JobFactory(state=JobState.DONE, label="done")
    response = admin_client.post(button(done, "cancel"), follow=True)
    done.refresh_from_db()
    assert done.state == JobState.DONE  # refused, and said so
    assert any(m.level_tag == "error" for m in response.context["messages"])
    assert admin_client.get(button(done, "retry")).status_code == 405  # POST only
    assert admin_client.post(button(done, "delete")).status_code == 404


def test_a_user_who_may_only_view_jobs_sees_no_buttons_and_a_forged_post_is_refused(client, clock):
    viewer = UserFactory(permissions=["litejobs.view_job"])
    client.force_login(viewer)
    dead = JobFactory(state=JobState.DEAD)
    content = client.get(page(dead)).content.decode()
    assert 'id="job-summary"' in content
    assert 'id="job-retry"' not in content
    assert client.post(button(dead, "retry")).status_code == 403
    dead.refresh_from_db()
    assert dead.state == JobState.DEAD


def test_the_buttons_need_the_csrf_token(clock):
    from django.test import Client

    admin = UserFactory(username="boss", is_superuser=True)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin)
    dead = JobFactory(state=JobState.DEAD)
    assert strict.post(button(dead, "retry")).status_code == 403
    dead.refresh_from_db()
    assert dead.state == JobState.DEAD
