"""Durable steps: replay from storage, sleeps and event waits, compensation, once-steps."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import transaction

from litejobs import publish_event
from litejobs.exceptions import InvalidInput
from litejobs.jobs.steps import HELD
from litejobs.models import Job, JobState, JobStep, StepState
from tests.factories import JobStepFactory
from tests.testapp.jobs import (
    atomic_stepped,
    charge_once,
    misuses_steps,
    saga,
    sleeper,
    stepped,
    waiter,
)
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db(transaction=True)


def marks(prefix):
    return list(Mark.objects.filter(label__startswith=prefix).values_list("label", flat=True))


def steps_of(job_id):
    return {s.name: s for s in JobStep.objects.filter(job_id=job_id)}


def test_completed_steps_replay_from_storage_and_only_the_failed_one_runs_again(clock, run_worker):
    enqueued = stepped.enqueue(label="s", fail_on=[1, 2])
    for _ in range(3):
        run_worker()
        clock.advance("1h")
    job = Job.objects.get(pk=enqueued.id)
    assert job.state == JobState.DONE and job.attempts == 3
    # Step one ran once and was replayed twice; step two's failed executions rolled back
    # their writes; step three ran once.
    assert sorted(marks("s:")) == ["s:one", "s:three", "s:two"]
    recorded = steps_of(job.id)
    assert {name: s.executions for name, s in recorded.items()} == {"one": 1, "two": 3, "three": 1}
    assert recorded["two"].output == "two-done"
    assert job.result == {
        "one": recorded["one"].output,
        "two": "two-done",
        "three": recorded["three"].output,
    }


def test_steps_in_an_atomic_job_commit_with_the_job(clock, run_worker):
    enqueued = atomic_stepped.enqueue(label="a")
    run_worker()
    assert Job.objects.get(pk=enqueued.id).state == JobState.DONE
    assert set(steps_of(enqueued.id)) == {"one", "two"}
    assert sorted(marks("a:")) == ["a:one", "a:two"]


def test_a_durable_sleep_releases_the_worker_and_resumes_when_due(clock, run_worker):
    enqueued = sleeper.enqueue(label="z")
    assert run_worker() == {"waiting": 1}
    job = Job.objects.get(pk=enqueued.id)
    assert (job.state, job.attempts) == (JobState.WAITING, 0)  # the attempt is uncounted
    assert job.run_at == clock.now() + timedelta(hours=1)
    clock.advance("59m")
    assert run_worker() == {}
    clock.advance("1m")
    assert run_worker() == {"done": 1}
    job.refresh_from_db()
    assert (job.state, job.attempts) == (JobState.DONE, 1)
    assert sorted(marks("z:")) == ["z:after", "z:before"]


def test_an_event_wakes_the_matching_waiter_and_hands_it_the_payload(clock, run_worker):
    enqueued = waiter.enqueue(label="w", order_id=7)
    assert run_worker() == {"waiting": 1}
    deadline = clock.now() + timedelta(days=1)
    assert Job.objects.get(pk=enqueued.id).run_at == deadline

    with pytest.raises(RuntimeError), transaction.atomic():  # rolled back: wakes nobody
        assert publish_event("test.settled", {"order_id": 7}) == 1
        raise RuntimeError
    publish_event("test.settled", {"order_id": 8})  # another order: no match
    assert Job.objects.get(pk=enqueued.id).run_at == deadline
    assert run_worker() == {}

    assert publish_event("test.settled", {"order_id": 7, "amount": 12}) == 1
    assert run_worker() == {"done": 1}
    job = Job.objects.get(pk=enqueued.id)
    assert job.result == {"order_id": 7, "amount": 12}
    assert marks("w:") == ["w:ship"]


def test_an_event_published_before_the_wait_was_written_still_counts(clock, run_worker):
    enqueued = waiter.enqueue(label="early", order_id=3)
    run_worker()
    # Published at the same instant the wait began (the frozen clock): it counts.
    publish_event("test.settled", {"order_id": 3})
    assert run_worker() == {"done": 1}
    assert Job.objects.get(pk=enqueued.id).result == {"order_id": 3}


def test_a_wait_that_times_out_raises_in_the_body(clock, run_worker):
    enqueued = waiter.enqueue(label="late", order_id=9)
    run_worker()
    clock.advance("1d")
    assert run_worker() == {"done": 1}
    assert Job.objects.get(pk=enqueued.id).result == {"timed_out": True}
    assert steps_of(enqueued.id)["settled"].state == StepState.TIMED_OUT
    assert marks("late:") == ["late:timeout"]


def test_compensations_run_last_in_first_out_only_when_the_job_fails_for_good(clock, run_worker):
    enqueued = saga.enqueue(label="c", fail="always")
    run_worker()  # attempt 1 fails: a retry, so nothing is compensated
    assert Job.objects.get(pk=enqueued.id).state == JobState.FAILED
    assert not [m for m in marks("c:") if "refund" in m or "release" in m]
    clock.advance("1h")
    run_worker()  # attempt 2 fails for good
    job = Job.objects.get(pk=enqueued.id)
    assert job.state == JobState.DEAD
    labels = list(
        Mark.objects.filter(label__startswith="c:").order_by("id").values_list("label", flat=True)
    )
    charge, reserve = labels[0], labels[1]
    assert labels[:2] == ["c:charge", "c:reserve"]
    # Undone last-in first-out, each against the output of the step it undoes.
    assert [label.split(":")[1] for label in labels[2:]] == ["release", "refund"]
    recorded = steps_of(job.id)
    assert recorded["compensate:reserve"].state == StepState.COMPLETED
    assert recorded["compensate:charge"].sequence > recorded["compensate:reserve"].sequence
    assert charge and reserve


def test_a_successful_retry_compensates_nothing(clock, run_worker):
    enqueued = saga.enqueue(label="r", fail="first")
    run_worker()
    clock.advance("1h")
    run_worker()
    assert Job.objects.get(pk=enqueued.id).state == JobState.DONE
    assert sorted(marks("r:")) == ["r:charge", "r:reserve", "r:ship"]


def test_a_cancelled_job_is_not_compensated(clock, run_worker):
    enqueued = saga.enqueue(label="x", fail="always")
    run_worker()
    call_command("litejobs", "cancel", str(enqueued.id), "--by", "tester")
    assert Job.objects.get(pk=enqueued.id).state == JobState.CANCELLED
    assert sorted(marks("x:")) == ["x:charge", "x:reserve"]


def _crashed_mid_charge(clock, label: str) -> Job:
    """A charge_once job as a crash mid-step leaves it: the step's marker, no outcome."""
    job = Job.objects.get(pk=charge_once.enqueue(label=label).id)
    JobStepFactory(job=job, name="charge", state=StepState.STARTED, once=True, executions=1)
    return job


def test_a_once_step_with_an_unknown_outcome_waits_for_an_operator(clock, run_worker):
    job = _crashed_mid_charge(clock, label="o")
    assert run_worker() == {"held": 1}
    job.refresh_from_db()
    assert (job.state, job.run_at, job.error_class) == (
        JobState.WAITING,
        HELD,
        "litejobs.StepOutcomeUnknown",
    )
    assert f"resolve-step {job.id} charge" in job.error_message
    assert steps_of(job.id)["charge"].state == StepState.UNKNOWN
    assert not marks("o:")

    call_command("litejobs", "resolve-step", str(job.id), "charge", "--ran", "--by", "ops")
    assert run_worker() == {"done": 1}
    assert marks("o:") == ["o:receipt"]  # charge was not run again


def test_an_operator_saying_a_once_step_did_not_run_runs_it(clock, run_worker):
    job = _crashed_mid_charge(clock, label="n")
    run_worker()
    call_command("litejobs", "resolve-step", str(job.id), "charge", "--not-ran", "--by", "ops")
    assert run_worker() == {"done": 1}
    assert sorted(marks("n:")) == ["n:charge", "n:receipt"]
    assert steps_of(job.id)["charge"].executions == 2


@pytest.mark.parametrize(
    ("mistake", "code"),
    [
        ("duplicate", "step-duplicate"),
        ("not-json", "step-output-not-json"),
        ("unknown-event", "event-unknown"),
    ],
)
def test_step_misuse_stops_the_job_with_a_clear_error(clock, run_worker, mistake, code):
    enqueued = misuses_steps.enqueue(label=mistake, mistake=mistake)
    run_worker()
    job = Job.objects.get(pk=enqueued.id)
    assert job.state == JobState.DEAD and job.attempts == 1
    assert f"[{code}]" in job.error_message


def test_publishing_an_undeclared_event_is_refused():
    with pytest.raises(InvalidInput) as caught:
        publish_event("test.unsettled", {"order_id": 1})
    assert caught.value.code == "event-unknown"


def test_the_job_page_shows_its_steps_as_a_timeline(clock, run_worker, admin_client):
    enqueued = stepped.enqueue(label="t", fail_on=[1])
    run_worker()
    page = admin_client.get(f"/admin/litejobs/job/{enqueued.id}/change/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "steps (timeline)" in body.lower()
    assert "step two fails on attempt 1" in body  # the failed step's error
    assert body.index(">one<") < body.index(">two<")


def test_a_failed_step_of_a_dead_job_does_not_promise_a_next_attempt(
    clock, run_worker, admin_client
):
    retried = stepped.enqueue(label="again", fail_on=[1])
    spent = stepped.enqueue(label="spent", fail_on=[1, 2, 3])
    for _ in range(3):
        run_worker()
        clock.advance("1h")
        Job.objects.filter(pk=retried.id).update(run_at=clock.now() + timedelta(days=1))
    assert Job.objects.get(pk=spent.id).state == JobState.DEAD
    assert Job.objects.get(pk=retried.id).state == JobState.FAILED
    for enqueued, shown in (
        (spent, "Failed (the job is dead: no next attempt)"),
        (retried, "Failed (runs again on the next attempt)"),
    ):
        body = admin_client.get(f"/admin/litejobs/job/{enqueued.id}/change/").content.decode()
        assert shown in body
    assert (
        "runs again"
        not in admin_client.get(f"/admin/litejobs/job/{spent.id}/change/").content.decode()
    )
