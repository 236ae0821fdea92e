"""Settle hooks in-process: one call per ending, written with the ending; none on a retry or a
suspension; a failing hook retries on its own and leaves the job as it ended."""

import logging
from datetime import timedelta

import pytest

from litejobs import job
from litejobs.exceptions import DeclarationError
from litejobs.hooks import SettleOutcome, metrics
from litejobs.jobs import catalog, operations
from litejobs.models import Job, JobAttempt, JobState
from litejobs.models.hooks import HOOK_ATTEMPTS, SETTLED_JOB
from tests.testapp.hooked import hooked, hooked_dropped, hooked_failing_hook
from tests.testapp.jobs import record
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db(transaction=True)


def hook_calls(outcome=None):
    """The (label, job id) of each hook call recorded."""
    marks = Mark.objects.filter(label__startswith="hook:")
    if outcome is not None:
        marks = marks.filter(label=f"hook:{outcome}")
    return sorted(marks.values_list("label", "value"))


def settled_jobs():
    return Job.objects.filter(name=SETTLED_JOB)


def test_a_completed_job_calls_its_hook_once_with_its_result(clock, run_worker):
    enqueued = hooked.enqueue(label="ok")
    run_worker()
    run_worker()
    assert hook_calls() == [("hook:done", enqueued.id)]
    note = Mark.objects.get(label="hook:done").note
    assert note.startswith("42|")
    hook_job = settled_jobs().get()
    assert hook_job.state == JobState.DONE
    assert hook_job.payload["outcome"] == SettleOutcome.DONE
    assert note.endswith(f"|{enqueued.id}:{hook_job.id}")


def test_the_hook_job_is_written_by_the_statement_that_ends_the_job(clock, run_worker):
    enqueued = hooked.enqueue(label="same-statement")
    # One worker pass without running what it wrote: the job's end and the hook's call are
    # both there, the hook's call not run yet.
    Job.objects.filter(pk=enqueued.id).update(state=JobState.DONE, finished_at=clock.now())
    hook_job = settled_jobs().get()
    assert (hook_job.state, hook_job.payload["job_id"]) == (JobState.READY, enqueued.id)
    assert hook_job.run_at == clock.now()


def test_a_dead_job_calls_its_hook_once_never_on_its_retry(clock, run_worker):
    enqueued = hooked.enqueue(label="dies", fail=True)
    run_worker()
    job = Job.objects.get(pk=enqueued.id)
    assert job.state == JobState.FAILED  # a retry is due: no hook
    assert not settled_jobs().exists()
    clock.advance(timedelta(minutes=1))
    run_worker()
    run_worker()
    assert Job.objects.get(pk=enqueued.id).state == JobState.DEAD
    assert hook_calls() == [("hook:dead", enqueued.id)]
    assert Mark.objects.get(label="hook:dead").note.startswith("builtins.RuntimeError|")


def test_a_job_cancelled_before_it_ran_calls_its_hook(clock, run_worker):
    enqueued = hooked.enqueue(label="never-ran")
    operations.cancel(enqueued.id, by="test")
    run_worker()
    assert hook_calls() == [("hook:cancelled", enqueued.id)]
    assert Job.objects.get(pk=enqueued.id).attempts == 0


def test_a_dropped_job_calls_its_hook_with_its_error(clock, run_worker):
    enqueued = hooked_dropped.enqueue(label="gone")
    run_worker()
    run_worker()
    assert not Job.objects.filter(pk=enqueued.id).exists()
    assert hook_calls() == [("hook:dropped", enqueued.id)]
    assert Mark.objects.get(label="hook:dropped").note.startswith("builtins.ValueError|")


def test_the_purge_of_a_finished_job_is_no_ending(clock, run_worker):
    enqueued = hooked.enqueue(label="purged")
    run_worker()
    run_worker()
    Job.objects.filter(pk=enqueued.id).delete()
    run_worker()
    assert hook_calls() == [("hook:done", enqueued.id)]


def test_a_suspended_job_calls_no_hook_until_it_ends(clock, run_worker):
    enqueued = hooked.enqueue(label="naps", nap=True)
    run_worker()
    assert Job.objects.get(pk=enqueued.id).state == JobState.WAITING
    assert not settled_jobs().exists()
    clock.advance(timedelta(hours=2))
    run_worker()
    run_worker()
    assert hook_calls() == [("hook:done", enqueued.id)]


def test_each_ending_calls_the_hook_again_after_an_operator_retry(clock, run_worker):
    enqueued = hooked.enqueue(label="twice")
    run_worker()
    operations.retry(enqueued.id, by="test")
    run_worker()
    run_worker()
    assert hook_calls() == [("hook:done", enqueued.id), ("hook:done", enqueued.id)]
    keys = {note.split("|")[1] for note in Mark.objects.values_list("note", flat=True)}
    assert len(keys) == 2  # each ending its own key


def test_a_failing_hook_retries_on_its_own_and_never_changes_the_job(clock, run_worker, caplog):
    caplog.set_level(logging.ERROR, logger="litejobs.hooks")
    enqueued = hooked_failing_hook.enqueue(label="partner-down")
    run_worker()
    for _ in range(HOOK_ATTEMPTS + 1):
        clock.advance(timedelta(minutes=5))
        run_worker()
    job = Job.objects.get(pk=enqueued.id)
    assert (job.state, job.result) == (JobState.DONE, "fine")
    hook_job = settled_jobs().get()
    assert hook_job.state == JobState.DEAD
    assert hook_job.error_class == "builtins.RuntimeError", hook_job.error_traceback
    assert JobAttempt.objects.filter(job=hook_job).count() == HOOK_ATTEMPTS
    logged = [r.getMessage() for r in caplog.records if "settle hook failed" in r.getMessage()]
    assert len(logged) == HOOK_ATTEMPTS
    assert logged[0].startswith(f"settle hook failed job={enqueued.id} ")
    # The hook's writes roll back with each failed try: the hook job is atomic.
    assert not Mark.objects.filter(label="hook-try").exists()
    families = {family.name: family for family in metrics.families(clock.now())}
    assert families["litejobs_settle_hooks"].samples == [(("dead",), 1)]
    assert families["litejobs_settle_hook_failures"].samples == [((), HOOK_ATTEMPTS)]


def test_a_job_without_a_hook_writes_no_call(clock, run_worker):
    record.enqueue(label="plain", value=1)
    run_worker()
    assert not settled_jobs().exists()
    assert not Job.objects.filter(settle_hook=True).exists()


def test_the_hook_runs_under_the_jobs_tenant_and_queue(clock, run_worker):
    enqueued = hooked.enqueue(label="tenant")
    Job.objects.filter(pk=enqueued.id).update(tenant="acme", queue="default")
    run_worker()
    hook_job = settled_jobs().get()
    assert (hook_job.tenant, hook_job.queue) == ("acme", "default")


def _nested_hook():
    def hook(settled):
        return None

    return hook


def _two_arguments(settled, extra):
    return None


@pytest.mark.parametrize(
    ("hook", "problem"),
    [
        (lambda settled: None, "lambda or a nested function"),
        (_nested_hook(), "lambda or a nested function"),
        ("tests.testapp.hooked.note_settled", "not callable"),
        (_two_arguments, "must take one argument"),
    ],
)
def test_a_settle_hook_must_be_a_module_level_function_of_one_argument(hook, problem):
    with pytest.raises(DeclarationError) as refused:
        job(lambda ctx: None, name="tests.bad_hook", key=lambda: "k", on_settled=hook)
    assert refused.value.code == "on-settled-invalid"
    assert problem in str(refused.value)
    assert "tests.bad_hook" not in {d.name for d in catalog.all_jobs()}
