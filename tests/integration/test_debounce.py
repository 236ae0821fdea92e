"""Debounce: an enqueue moves the job of its key that has not started yet (later run_at,
newest arguments) instead of adding one; a running job is left alone; racing enqueues of one
key leave one job."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connections, transaction

from litejobs import job
from litejobs.exceptions import DeclarationError, InvalidInput
from litejobs.jobs import catalog
from litejobs.jobs.holdups import HoldUpCode, holdup_of
from litejobs.models import Job, JobState
from tests.testapp.hooked import reindex
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db(transaction=True)

QUIET = timedelta(seconds=5)


def test_the_first_enqueue_waits_out_the_quiet_period(clock):
    enqueued = reindex.enqueue(doc_id=1, text="a")
    job = Job.objects.get(pk=enqueued.id)
    assert not enqueued.deduped
    assert (job.state, job.run_at) == (JobState.SCHEDULED, clock.now() + QUIET)


def test_enqueues_of_one_key_keep_one_job_with_the_newest_arguments_and_a_later_run_at(
    clock, run_worker
):
    first = reindex.enqueue(doc_id=1, text="first edit")
    clock.advance(timedelta(seconds=3))
    second = reindex.enqueue(doc_id=1, text="second edit")
    clock.advance(timedelta(seconds=3))
    third = reindex.enqueue(doc_id=1, text="third edit")
    assert first.id == second.id == third.id
    assert (second.deduped, third.deduped) == (True, True)
    job = Job.objects.get(name=reindex.name)
    assert job.payload == {"doc_id": 1, "text": "third edit"}
    assert (job.state, job.run_at) == (JobState.SCHEDULED, clock.now() + QUIET)
    run_worker()  # not due yet: the quiet period restarted at the last edit
    assert not Mark.objects.exists()
    clock.advance(QUIET)
    run_worker()
    assert list(Mark.objects.values_list("note", flat=True)) == ["third edit"]


def test_a_due_job_not_started_yet_is_moved_too(clock):
    enqueued = reindex.enqueue(doc_id=2, text="old")
    clock.advance(QUIET * 2)
    Job.objects.filter(pk=enqueued.id).update(state=JobState.READY)
    reindex.enqueue(doc_id=2, text="new")
    job = Job.objects.get(pk=enqueued.id)
    assert (job.state, job.run_at, job.payload["text"]) == (
        JobState.SCHEDULED,
        clock.now() + QUIET,
        "new",
    )


def test_a_running_job_is_not_moved(clock):
    enqueued = reindex.enqueue(doc_id=3, text="being indexed")
    clock.advance(QUIET)
    Job.objects.filter(pk=enqueued.id).update(
        state=JobState.RUNNING,
        attempts=1,
        started_at=clock.now(),
        lease_expires_at=clock.now() + timedelta(minutes=1),
    )
    again = reindex.enqueue(doc_id=3, text="edited meanwhile")
    job = Job.objects.get(pk=enqueued.id)
    assert (again.id, again.deduped) == (enqueued.id, True)
    # Its run_at is still the first enqueue's plus the quiet period: now.
    assert (job.state, job.run_at, job.payload["text"]) == (
        JobState.RUNNING,
        clock.now(),
        "being indexed",
    )
    assert Job.objects.filter(name=reindex.name).count() == 1


def test_a_finished_job_is_not_moved_a_new_one_is_added(clock, run_worker):
    enqueued = reindex.enqueue(doc_id=4, text="indexed")
    clock.advance(QUIET)
    run_worker()
    again = reindex.enqueue(doc_id=4, text="edited after")
    assert again.id != enqueued.id and not again.deduped
    assert Job.objects.get(pk=enqueued.id).payload["text"] == "indexed"


def test_racing_enqueues_of_one_key_leave_one_job(clock):
    barrier = threading.Barrier(2)
    answers, errors = [], []

    def enqueue(text: str) -> None:
        try:
            barrier.wait(5)
            with transaction.atomic():
                answers.append((text, reindex.enqueue(doc_id=5, text=text)))
                time.sleep(0.3)  # the other's insert of the same key waits on this one
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=enqueue, args=(text,)) for text in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not errors
    assert len({answer.id for _, answer in answers}) == 1
    assert sorted(answer.deduped for _, answer in answers) == [False, True]
    [job] = Job.objects.filter(name=reindex.name)
    # The enqueue that waited for the other's commit moved its job: its arguments won.
    [later] = [text for text, answer in answers if answer.deduped]
    assert job.payload["text"] == later


def test_a_debounced_job_takes_no_delay_or_run_at(clock):
    with pytest.raises(InvalidInput) as refused:
        reindex.enqueue(doc_id=6, text="x", delay="1m")
    assert refused.value.code == "option-conflict"
    with pytest.raises(InvalidInput) as refused:
        reindex.enqueue(doc_id=6, text="x", run_at=clock.now())
    assert refused.value.code == "option-conflict"
    assert not Job.objects.exists()


def test_enqueue_many_of_a_debounced_job_is_refused(clock):
    with pytest.raises(InvalidInput) as refused:
        reindex.enqueue_many([{"doc_id": 7, "text": "x"}])
    assert refused.value.code == "debounce-many"
    assert not Job.objects.exists()


@pytest.mark.parametrize("debounce", [0, "-1s", "2d", "soon", True])
def test_a_debounce_must_be_a_duration_above_zero_of_at_most_a_day(debounce):
    with pytest.raises(DeclarationError) as refused:
        job(lambda ctx: None, name="tests.bad_debounce", key=lambda: "k", debounce=debounce)
    assert refused.value.code == "debounce-invalid"
    assert "tests.bad_debounce" not in {d.name for d in catalog.all_jobs()}


def test_why_a_debounced_job_waits_is_its_quiet_period(clock):
    enqueued = reindex.enqueue(doc_id=8, text="x")
    reason = holdup_of(Job.objects.get(pk=enqueued.id))
    assert reason is not None
    assert (reason.code, reason.until) == (HoldUpCode.DEBOUNCED, clock.now() + QUIET)
    assert reason.as_json()["code"] == "debounced"
