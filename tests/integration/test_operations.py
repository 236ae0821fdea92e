"""Operator verbs: each allowed transition, each refusal, purge by retention in batches."""

import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from litejobs.core.durations import format_age
from litejobs.doctor import diagnose
from litejobs.exceptions import InvalidInput, JobNotFound, TransitionRefused
from litejobs.jobs import claims, leases, operations, queues, retention, showing, transitions
from litejobs.models import Job, JobAttempt, JobState, QueueState
from litejobs.worker import Worker
from tests.conftest import wait_for
from tests.factories import JobAttemptFactory, JobFactory, WorkerFactory, heartbeat_row
from tests.testapp.jobs import gated, gives_up, record
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db


def claim(clock):
    now = clock.now()
    with connection.cursor() as cursor:
        return claims.claim(
            cursor,
            owner="worker-1",
            queues=[],
            limit=10,
            now=now,
            lease=timedelta(minutes=1),
        ).jobs


# retry -------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_retry_of_a_dead_job_runs_it_again_and_keeps_its_history(clock, run_worker):
    enqueued = gives_up.enqueue(label="g")
    run_worker()
    dead = Job.objects.get(pk=enqueued.id)
    assert (dead.state, dead.attempts, dead.error_class) == (
        JobState.DEAD,
        1,
        "litejobs.exceptions.Permanent",
    )
    clock.advance("1h")

    outcome = operations.retry(enqueued.id, by="alice")

    job = Job.objects.get(pk=enqueued.id)
    assert (outcome.action, outcome.state) == ("retried", JobState.READY)
    assert (job.state, job.attempts, job.run_at) == (JobState.READY, 0, clock.now())
    assert (job.error_class, job.error_message, job.error_traceback) == ("", "", "")
    assert job.finished_at is None
    assert JobAttempt.objects.filter(job=job).count() == 1  # history kept

    assert run_worker() == {"dead": 1}  # it ran again (and gave up again)
    assert JobAttempt.objects.filter(job=job).count() == 2
    assert Job.objects.get(pk=enqueued.id).attempts == 1


@pytest.mark.django_db(transaction=True)
def test_a_retried_job_numbers_its_later_attempts_after_the_earlier_ones(clock, run_worker):
    """A retry starts the attempt counter again; the history goes on, each row its own number,
    however the attempt ended (failed, cancelled after its worker was lost, reaped)."""
    enqueued = gives_up.enqueue(label="numbered")
    run_worker()
    operations.retry(enqueued.id, by="alice")
    run_worker()
    operations.retry(enqueued.id, by="alice")
    [held] = claim(clock)
    clock.advance("5m")
    operations.cancel(held.id, by="bob")
    operations.retry(enqueued.id, by="alice")
    [held] = claim(clock)
    clock.advance("5m")
    with connection.cursor() as cursor:
        leases.heartbeat(cursor, worker=heartbeat_row(clock.now(), owner="w2"), held=[], reap=True)
    history = JobAttempt.objects.filter(job_id=enqueued.id).order_by("id")
    assert list(history.values_list("number", "outcome")) == [
        (1, "failed"),
        (2, "failed"),
        (3, "lease_expired"),
        (4, "lease_expired"),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_retried_job_runs_to_completion(clock, run_worker):
    job = JobFactory(state=JobState.DEAD, label="again", error_class="builtins.RuntimeError")
    operations.retry(job.id, by="alice")
    assert run_worker() == {"done": 1}
    assert Job.objects.get(pk=job.id).state == JobState.DONE
    assert Mark.objects.filter(label="again").count() == 1


@pytest.mark.parametrize("state", [JobState.DONE, JobState.CANCELLED, JobState.FAILED])
def test_retry_applies_to_finished_and_failed_jobs(clock, state):
    job = JobFactory(state=state, error_message="boom")
    operations.retry(job.id, by="alice")
    job.refresh_from_db()
    assert (job.state, job.attempts, job.error_message) == (JobState.READY, 0, "")


@pytest.mark.parametrize(
    "state", [JobState.READY, JobState.SCHEDULED, JobState.RUNNING, JobState.WAITING]
)
def test_retry_of_a_live_job_is_refused_naming_its_state(clock, state):
    job = JobFactory(state=state)
    before = Job.objects.filter(pk=job.id).values().get()
    with pytest.raises(TransitionRefused) as refused:
        operations.retry(job.id, by="alice")
    assert refused.value.code == "retry-refused"
    assert f"Job {job.id} is {state}" in str(refused.value)
    assert Job.objects.filter(pk=job.id).values().get() == before


def test_retry_is_refused_while_a_live_job_holds_the_key(clock):
    done = JobFactory(state=JobState.DONE, label="k")
    live = record.enqueue(label="k")  # the key is free once the first is done
    assert not live.deduped
    with pytest.raises(TransitionRefused) as refused:
        operations.retry(done.id, by="alice")
    assert refused.value.code == "key-live"
    assert f"job {live.id} (ready)" in str(refused.value)
    assert Job.objects.get(pk=done.id).state == JobState.DONE


def test_an_unknown_id_is_job_not_found(clock):
    for verb in (operations.retry, operations.cancel, operations.promote):
        with pytest.raises(JobNotFound) as missing:
            verb(987654, by="alice")
        assert missing.value.code == "job-not-found"


def test_a_verb_needs_to_know_who_acts(clock):
    job = JobFactory(state=JobState.DONE)
    with pytest.raises(InvalidInput) as refused:
        operations.retry(job.id, by=" ")
    assert refused.value.code == "by-missing"
    assert Job.objects.get(pk=job.id).state == JobState.DONE


def test_verbs_log_who_acted(clock, caplog):
    job = JobFactory(state=JobState.DONE)
    with caplog.at_level("INFO", logger="litejobs.jobs.operations"):
        operations.retry(job.id, by="alice")
    assert f"job retried id={job.id} by=alice" in caplog.text


# cancel ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "state", [JobState.READY, JobState.SCHEDULED, JobState.FAILED, JobState.WAITING]
)
def test_cancel_of_a_waiting_job_is_immediate(clock, state):
    job = JobFactory(state=state)
    outcome = operations.cancel(job.id, by="bob")
    job.refresh_from_db()
    assert (outcome.action, job.state, job.finished_at) == ("cancelled", "cancelled", clock.now())


@pytest.mark.parametrize("state", [JobState.DONE, JobState.DEAD, JobState.CANCELLED])
def test_cancel_of_a_finished_job_is_refused(clock, state):
    job = JobFactory(state=state)
    with pytest.raises(TransitionRefused) as refused:
        operations.cancel(job.id, by="bob")
    assert refused.value.code == "cancel-refused"
    assert f"Job {job.id} is {state}" in str(refused.value)
    assert Job.objects.get(pk=job.id).state == state


def test_cancel_of_a_running_job_requests_it_from_its_worker(clock):
    record.enqueue(label="r")
    [held] = claim(clock)
    outcome = operations.cancel(held.id, by="bob")
    job = Job.objects.get(pk=held.id)
    assert (outcome.action, job.state, job.cancel_requested) == (
        "cancel-requested",
        "running",
        True,
    )
    assert "requested" in outcome.message and "worker-1" in outcome.message
    # The worker's next heartbeat is told.
    now = clock.now()
    with connection.cursor() as cursor:
        answer = leases.heartbeat(cursor, worker=heartbeat_row(now), held=[held], reap=False)
    assert answer.cancel_requested == {held.id}


def test_cancel_of_a_running_job_whose_worker_is_gone_is_immediate(clock):
    record.enqueue(label="lost")
    [held] = claim(clock)
    clock.advance("5m")  # the lease lapsed: nobody renews it
    outcome = operations.cancel(held.id, by="bob")
    job = Job.objects.get(pk=held.id)
    assert (outcome.action, job.state, job.lease_expires_at) == ("cancelled", "cancelled", None)
    attempt = JobAttempt.objects.get(job=job)
    assert (attempt.number, attempt.outcome, attempt.worker) == (1, "lease_expired", "worker-1")
    # The lost worker's late completion is refused: the job is no longer running.
    with connection.cursor() as cursor:
        assert not transitions.complete(cursor, held, now=clock.now(), result_json=None)


@pytest.mark.django_db(transaction=True)
def test_cancel_reaches_a_body_running_in_a_worker(settings, tmp_path):
    settings.LITEJOBS = {"LEASE": "2s", "HEARTBEAT": "0.2s", "POLL_INTERVAL": "1s"}
    gate = tmp_path / "gate"
    enqueued = gated.enqueue(label="c", gate=str(gate))
    worker = Worker(concurrency=1, install_signals=False)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: Path(f"{gate}.started.1").exists(), what="the job to start")
        assert operations.cancel(enqueued.id, by="bob").action == "cancel-requested"
        wait_for(
            lambda: Job.objects.get(pk=enqueued.id).state == JobState.CANCELLED,
            what="the job to end cancelled",
        )
    finally:
        worker.request_stop()
        thread.join(20)
    assert not Mark.objects.exists()  # its transaction rolled back
    assert JobAttempt.objects.get(job_id=enqueued.id).outcome == "cancelled"


# promote -----------------------------------------------------------------------------------


@pytest.mark.parametrize("state", [JobState.SCHEDULED, JobState.FAILED])
def test_promote_makes_a_waiting_job_due_now(clock, state):
    job = JobFactory(state=state)
    assert job.run_at > clock.now()
    outcome = operations.promote(job.id, by="carol")
    job.refresh_from_db()
    assert (outcome.action, outcome.state, job.state, job.run_at) == (
        "promoted",
        state,
        state,
        clock.now(),
    )


@pytest.mark.parametrize(
    "state", [JobState.READY, JobState.RUNNING, JobState.DONE, JobState.DEAD, JobState.WAITING]
)
def test_promote_of_other_states_is_refused(clock, state):
    job = JobFactory(state=state)
    with pytest.raises(TransitionRefused) as refused:
        operations.promote(job.id, by="carol")
    assert refused.value.code == "promote-refused"
    assert Job.objects.get(pk=job.id).run_at == job.run_at


# pause / resume ----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_pause_stops_claims_until_resume(clock, run_worker):
    record.enqueue(label="p")
    state = queues.pause("default", reason="database maintenance", by="dave")
    row = QueueState.objects.get(name="default")
    assert (row.paused, row.reason, row.changed_by, row.changed_at) == (
        True,
        "database maintenance",
        "dave",
        clock.now(),
    )
    assert state.paused
    assert run_worker() == {}
    clock.advance("1m")
    queues.resume("default", by="erin")
    row.refresh_from_db()
    assert (row.paused, row.reason, row.changed_by, row.changed_at) == (
        False,
        "",
        "erin",
        clock.now(),
    )
    assert run_worker() == {"done": 1}


def test_pause_needs_a_reason_and_a_valid_queue_name(clock):
    with pytest.raises(InvalidInput) as refused:
        queues.pause("default", reason="  ", by="dave")
    assert refused.value.code == "reason-required"
    with pytest.raises(InvalidInput) as refused:
        queues.pause("no spaces allowed", reason="x", by="dave")
    assert refused.value.code == "queue-invalid"
    assert not QueueState.objects.exists()


# purge -------------------------------------------------------------------------------------


def test_purge_honours_each_states_retention_in_batches(clock, settings):
    settings.LITEJOBS = {
        "PURGE_BATCH": 2,
        "RETENTION": {"done": "1d", "cancelled": "2d", "dead": "30d"},
    }
    now = clock.now()
    old_done = [
        JobFactory(state=JobState.DONE, label=f"d{i}", finished_at=now - timedelta(days=2)).id
        for i in range(5)
    ]
    young_done = JobFactory(
        state=JobState.DONE, label="young", finished_at=now - timedelta(hours=1)
    )
    old_cancelled = JobFactory(
        state=JobState.CANCELLED, label="c", finished_at=now - timedelta(days=3)
    )
    kept_cancelled = JobFactory(
        state=JobState.CANCELLED, label="c2", finished_at=now - timedelta(days=1)
    )
    kept_dead = JobFactory(state=JobState.DEAD, label="dead", finished_at=now - timedelta(days=10))
    live = JobFactory(state=JobState.READY, label="live", created_at=now - timedelta(days=400))
    JobAttemptFactory(job_id=old_done[0], finished_at=now - timedelta(days=2))
    JobAttemptFactory(job=kept_dead, finished_at=now - timedelta(days=10))

    with CaptureQueriesContext(connection) as queries:
        counts = retention.purge()

    assert counts == {"done": 5, "dead": 0, "cancelled": 1}
    deletes = [q["sql"] for q in queries if "DELETE FROM litejobs_job " in q["sql"]]
    # done: 2 + 2 + 1 (the short batch ends it); dead: 0; cancelled: 1.
    assert len(deletes) == 5
    assert set(Job.objects.values_list("pk", flat=True)) == {
        young_done.id,
        kept_cancelled.id,
        kept_dead.id,
        live.id,
    }
    assert old_cancelled.id not in set(Job.objects.values_list("pk", flat=True))
    assert list(JobAttempt.objects.values_list("job_id", flat=True)) == [kept_dead.id]


def test_purge_under_a_later_clock_removes_what_has_aged(clock, settings):
    settings.LITEJOBS = {"RETENTION": {"done": "7d"}}
    job = JobFactory(state=JobState.DONE)
    assert retention.purge()["done"] == 0
    clock.advance("7d")
    assert retention.purge()["done"] == 0  # exactly the retention: still kept
    clock.advance("1s")
    assert retention.purge()["done"] == 1
    assert not Job.objects.filter(pk=job.id).exists()


# reads -------------------------------------------------------------------------------------


def test_safe_payload_redacts_declared_fields_and_everything_of_unknown_jobs():
    assert showing.safe_payload("testapp.charge_card", {"card_number": "4111"}) == {
        "card_number": "[redacted]"
    }
    assert showing.safe_payload("testapp.record", {"label": "a"}) == {"label": "a"}
    assert showing.safe_payload("gone.job", {"token": "s3cret", "n": 1}) == {
        "token": "[redacted]",
        "n": "[redacted]",
    }


def test_safe_output_blanks_a_jobs_sensitive_values_out_of_its_result_and_progress():
    card = "4111111111111111"
    result = {"receipt": f"charged {card}", "card": int(card), card: True, "n": 3, "ok": None}
    assert showing.safe_output("testapp.charge_card", {"card_number": card}, result) == {
        "receipt": "charged [redacted]",
        "card": "[redacted]",
        "[redacted]": True,
        "n": 3,
        "ok": None,
    }
    progress = {"done": 1, "total": 2, "note": f"charging {card}"}
    assert showing.safe_output("testapp.charge_card", {"card_number": card}, progress) == {
        "done": 1,
        "total": 2,
        "note": "charging [redacted]",
    }
    assert showing.safe_output("testapp.record", {"label": "a"}, ["a b"]) == ["a b"]
    assert showing.safe_output("gone.job", {"token": "s3cret"}, "got s3cret") == ("got [redacted]")
    assert showing.safe_output("testapp.charge_card", {"card_number": card}, None) is None


def test_state_label_marks_due_scheduled_and_failed_jobs(clock):
    now = clock.now()
    assert showing.state_label("scheduled", now, now) == "ready (due)"
    assert showing.state_label("failed", now - timedelta(1), now) == "failed (retry due)"
    assert showing.state_label("scheduled", now + timedelta(1), now) == "scheduled"
    assert showing.state_label("done", now, now) == "done"


def test_queue_overview_counts_each_state_and_the_oldest_due_job(clock):
    now = clock.now()
    JobFactory(state=JobState.READY, label="a", run_at=now - timedelta(minutes=7))
    JobFactory(state=JobState.READY, label="b", run_at=now - timedelta(minutes=1))
    JobFactory(state=JobState.SCHEDULED, label="c")
    JobFactory(state=JobState.DEAD, label="d")
    JobFactory(state=JobState.DONE, label="e")
    queues.pause("reports", reason="quarter close", by="dave")
    overview = {s.name: s for s in queues.queue_overview()}
    default = overview["default"]
    assert default.counts == {"ready": 2, "scheduled": 1, "running": 0, "failed": 0, "dead": 1}
    assert (default.due, default.oldest_due_age, default.paused) == (2, timedelta(minutes=7), False)
    reports = overview["reports"]
    assert (reports.paused, reports.reason, reports.counts["ready"]) == (True, "quarter close", 0)


def test_diagnose_finds_each_problem(clock):
    now = clock.now()
    assert diagnose(max_ready_age=timedelta(minutes=5)).healthy
    dead = JobFactory(state=JobState.DEAD, label="dead", finished_at=now - timedelta(hours=2))
    JobFactory(state=JobState.DEAD, label="old", finished_at=now - timedelta(days=2))
    lapsed = JobFactory(
        state=JobState.RUNNING, label="lapsed", lease_expires_at=now - timedelta(seconds=1)
    )
    JobFactory(state=JobState.READY, label="late", run_at=now - timedelta(minutes=6))
    diagnosis = diagnose(max_ready_age=timedelta(minutes=5))
    problems = {p.code: p for p in diagnosis.problems}
    assert set(problems) == {"dead-jobs", "lease-lapsed", "ready-backlog", "no-worker"}
    assert problems["dead-jobs"].job_ids == (dead.id,)  # only the last day
    assert problems["lease-lapsed"].job_ids == (lapsed.id,)
    assert "6m" in problems["ready-backlog"].message

    # A live worker serving every queue answers "no-worker"; a pause turns the backlog to a note.
    WorkerFactory()
    queues.pause("default", reason="maintenance", by="dave")
    diagnosis = diagnose(max_ready_age=timedelta(minutes=5))
    assert {p.code for p in diagnosis.problems} == {"dead-jobs", "lease-lapsed"}
    assert any("paused" in note and "maintenance" in note for note in diagnosis.notes)


def test_format_age():
    assert format_age(timedelta(seconds=45)) == "45s"
    assert format_age(timedelta(minutes=12, seconds=5)) == "12m 5s"
    assert format_age(timedelta(hours=3, minutes=20, seconds=9)) == "3h 20m"
    assert format_age(timedelta(days=2)) == "2d"
    assert format_age(timedelta(0)) == "0s"
