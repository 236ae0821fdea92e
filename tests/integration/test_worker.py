"""The worker in-process: outcomes, retries, dead letters, timeouts and fences."""

import logging
import threading
import time
from datetime import timedelta

import pgtrigger
import psycopg
import pytest
from django.db import connection
from django.test import override_settings

from litejobs.jobs import catalog, claims, leases, transitions
from litejobs.jobs.steps import Steps
from litejobs.models import Job, JobAttempt, JobState, QueueState
from litejobs.runtime.listening import connect
from litejobs.runtime.outage import Outage
from litejobs.worker import Worker
from litejobs.worker.acks import Acknowledgements
from litejobs.worker.dispatch import Dispatcher
from litejobs.worker.handbacks import HandedBack
from litejobs.worker.holdings import Holdings
from litejobs.worker.joblines import JobLines
from litejobs.worker.outcome import failed
from litejobs.worker.settling import Settler
from tests.conftest import wait_for
from tests.factories import QueueStateFactory, ReleasedJobFactory, heartbeat_row
from tests.testapp.jobs import (
    SESSIONS,
    charge_card,
    cooperative_slow,
    flaky,
    gives_up,
    holds_its_session,
    looks_up,
    loses_its_claim,
    marks_after_commit,
    noop,
    overruns,
    overruns_unfenced,
    record,
    stubborn,
)
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_job_runs_once_and_its_result_is_stored(clock, run_worker):
    enqueued = record.enqueue(label="hello", value=7)
    counts = run_worker()
    job = Job.objects.get(pk=enqueued.id)
    assert counts == {"done": 1}
    assert job.state == JobState.DONE
    assert job.result == 7
    assert job.attempts == 1
    assert job.finished_at == clock.now()
    assert list(Mark.objects.values_list("label", "value")) == [("hello", 7)]


def test_a_run_logs_its_start_and_end_lines_only_at_info(clock, run_worker, caplog):
    caplog.set_level(logging.WARNING, logger="litejobs")
    record.enqueue(label="quiet")
    run_worker()
    assert not [r for r in caplog.records if r.getMessage().startswith("job ")]
    caplog.set_level(logging.INFO, logger="litejobs")
    enqueued = record.enqueue(label="told", value=1)
    run_worker()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("job ")]
    assert lines[0] == f"job start id={enqueued.id} name={record.name} attempt=1/3 queue=default"
    assert lines[1].startswith(
        f"job end id={enqueued.id} name={record.name} outcome=done attempt=1"
    )


def test_the_end_line_of_an_acknowledged_job_reports_its_run_not_the_flush_wait(
    clock, run_worker, caplog
):
    caplog.set_level(logging.INFO, logger="litejobs")
    enqueued = noop.enqueue(n=1)
    with override_settings(LITEJOBS={"ACK_FLUSH": "1s"}):  # the flush waits a second
        assert run_worker(concurrency=1) == {"done": 1}
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("job end")]
    assert line.startswith(f"job end id={enqueued.id} name={noop.name} outcome=done")
    assert float(line.split("duration_ms=")[1]) < 500


def test_retry_times_follow_the_policy_under_the_injected_clock(clock, run_worker):
    enqueued = flaky.enqueue(label="f", failures=3)
    expected_delays = [10, 20, 40]  # exponential from 10s, no jitter
    for attempt, delay in enumerate(expected_delays, start=1):
        run_worker()
        job = Job.objects.get(pk=enqueued.id)
        assert job.state == JobState.FAILED
        assert job.attempts == attempt
        assert job.run_at == clock.now() + timedelta(seconds=delay)
        assert run_worker() == {}  # not due yet: nothing runs
        clock.advance(timedelta(seconds=delay))
    run_worker()
    job = Job.objects.get(pk=enqueued.id)
    assert job.state == JobState.DONE
    assert job.attempts == 4
    assert Mark.objects.filter(label="f").count() == 1  # failed attempts rolled back


def test_dead_letter_after_the_last_attempt_keeps_the_history(clock, run_worker):
    enqueued = flaky.enqueue(label="d", failures=10)
    for _ in range(4):
        run_worker()
        clock.advance("2h")
    job = Job.objects.get(pk=enqueued.id)
    assert job.state == JobState.DEAD
    assert job.error_class == "builtins.RuntimeError"
    assert job.error_message == "flaky failure 4"
    assert "Traceback" in job.error_traceback
    history = list(JobAttempt.objects.filter(job=job).values_list("number", "outcome"))
    assert history == [(1, "failed"), (2, "failed"), (3, "failed"), (4, "failed")]
    assert run_worker() == {}


def test_permanent_and_give_up_on_stop_at_once(clock, run_worker):
    first = gives_up.enqueue(label="p")
    second = looks_up.enqueue(label="k")
    run_worker()
    for job_id, error in (
        (first.id, "litejobs.exceptions.Permanent"),
        (second.id, "builtins.KeyError"),
    ):
        job = Job.objects.get(pk=job_id)
        assert (job.state, job.attempts, job.error_class) == (JobState.DEAD, 1, error)


def test_sensitive_values_never_reach_the_error_details(clock, run_worker):
    enqueued = charge_card.enqueue(card_number="4111111111111111")
    run_worker()
    job = Job.objects.get(pk=enqueued.id)
    attempt = JobAttempt.objects.get(job=job)
    for text in (job.error_message, job.error_traceback, attempt.error_message):
        assert "4111111111111111" not in text
    assert "[redacted]" in job.error_message


def test_a_timeout_cancels_a_cooperative_body(clock, run_worker, settings):
    enqueued = cooperative_slow.enqueue(label="t")
    counts = run_worker()
    job = Job.objects.get(pk=enqueued.id)
    assert counts == {"failed": 1}
    assert job.state == JobState.FAILED
    assert job.error_class == "litejobs.Timeout"
    assert JobAttempt.objects.get(job=job).outcome == "timeout"
    assert not Mark.objects.exists()  # its transaction rolled back


def test_a_body_ignoring_its_timeout_is_abandoned_and_its_late_completion_refused(
    clock, run_worker, settings
):
    settings.LITEJOBS = {"TIMEOUT_GRACE": "0.3s"}
    enqueued = stubborn.enqueue(label="s", seconds=2.5)
    run_worker()
    job = Job.objects.get(pk=enqueued.id)
    assert job.state == JobState.DEAD
    assert job.error_class == "litejobs.Timeout"
    # The stubborn thread finishes later; its write is rolled back by the refused completion.
    import time

    time.sleep(2.0)
    assert not Mark.objects.filter(label="s").exists()
    assert Job.objects.get(pk=enqueued.id).state == JobState.DEAD


def test_an_abandoned_body_gives_its_database_session_back(clock, run_worker, settings):
    settings.LITEJOBS = {"TIMEOUT_GRACE": "0.3s"}
    enqueued = holds_its_session.enqueue(label="held", seconds=5)
    worker = threading.Thread(target=run_worker)
    worker.start()
    wait_for(lambda: Job.objects.get(pk=enqueued.id).state == JobState.DEAD, timeout=4)

    def session_ended() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [SESSIONS["held"]])
            return cursor.fetchone() is None

    # The body still sleeps, but its session is gone: its open transaction rolled back.
    wait_for(session_ended, timeout=1, what="the abandoned body's session to end")
    assert not Mark.objects.exists()
    worker.join()


@pytest.mark.parametrize(
    ("declared", "kept"),
    [(overruns, []), (overruns_unfenced, [("late", 1)])],
    ids=["atomic", "unfenced"],
)
def test_an_attempt_that_returns_past_its_timeout_failed(clock, run_worker, declared, kept):
    # Within TIMEOUT_GRACE (10s by default), so the run is not abandoned: it returns late.
    enqueued = declared.enqueue(label="late")
    assert run_worker() == {"failed": 1}
    job = Job.objects.get(pk=enqueued.id)
    assert (job.state, job.error_class) == (JobState.FAILED, "litejobs.Timeout")
    assert job.run_at == clock.now() + timedelta(minutes=1)  # the retry policy applies
    assert "past its timeout of 1s" in job.error_message
    assert list(JobAttempt.objects.filter(job=job).values_list("outcome", flat=True)) == ["timeout"]
    # An atomic body's writes roll back with its refused completion; atomic=False ones
    # committed as they went.
    assert list(Mark.objects.values_list("label", "value")) == kept


def _claim(limit=10):
    from litejobs import clock as injected

    now = injected.now()
    with connection.cursor() as cursor:
        return claims.claim(
            cursor,
            owner="test",
            queues=[],
            limit=limit,
            now=now,
            lease=timedelta(minutes=1),
        ).jobs


def _steal(job_id):
    """Another claim takes the job: its fence moves on (from another connection)."""
    with connect("default") as other:
        other.execute(
            "UPDATE litejobs_job SET fence = nextval('litejobs_fence') WHERE id = %s", [job_id]
        )


def test_a_completion_with_a_stale_fence_is_refused(clock):
    record.enqueue(label="x")
    [job] = _claim()
    _steal(job.id)
    with connection.cursor() as cursor:
        assert not transitions.complete(cursor, job, now=clock.now(), result_json=None)
    assert Job.objects.get(pk=job.id).state == JobState.RUNNING


class RunnerStatements:
    """Counts what the worker's runner threads send for the jobs they run: statements (claims
    and a new connection's set-up aside, as their number depends on timing) and transactions (a
    BEGIN and a COMMIT each, sent when a commit ends an open transaction)."""

    def __init__(self, monkeypatch) -> None:
        self.statements: list[str] = []
        self.acknowledgements: list[str] = []  # sent by the batched acknowledgement's thread
        self.transactions = 0
        execute, commit = psycopg.Cursor.execute, psycopg.Connection.commit

        def counted_execute(cursor, query, *args, **kwargs):
            thread = threading.current_thread().name
            text = str(query)
            if "set_config('TimeZone'" in text or "litejobs_claimable_ids" in text:
                pass
            elif thread.startswith("litejobs-runner"):
                self.statements.append(text)
            elif thread == "litejobs-acks":
                self.acknowledgements.append(text)
            return execute(cursor, query, *args, **kwargs)

        def counted_commit(conn):
            busy = conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
            if busy and threading.current_thread().name.startswith("litejobs-runner"):
                self.transactions += 1
            return commit(conn)

        monkeypatch.setattr(psycopg.Cursor, "execute", counted_execute)
        monkeypatch.setattr(psycopg.Connection, "commit", counted_commit)


def test_atomic_bodies_that_send_nothing_are_acknowledged_in_batches(
    clock, run_worker, monkeypatch
):
    """Nothing can commit with their completions, so they share one fenced UPDATE."""
    noop.enqueue_many([{"n": n} for n in range(50)])
    sent = RunnerStatements(monkeypatch)
    assert run_worker(concurrency=2) == {"done": 50}
    assert sent.statements == [] and sent.transactions == 0  # no statement per job
    assert 1 <= len(sent.acknowledgements) <= 5  # up to ACK_BATCH (100) each, as they finish
    assert all("UPDATE litejobs_job" in text for text in sent.acknowledgements)
    assert Job.objects.filter(state=JobState.DONE).count() == 50


def test_a_step_that_sends_nothing_is_recorded_in_one_statement_without_a_transaction(
    clock, run_worker, monkeypatch
):
    """Its record is the whole transaction; a step that writes still commits with it."""
    from litejobs.models import JobStep
    from tests.testapp.jobs import pure_and_writing_steps

    pure_and_writing_steps.enqueue(label="x")
    sent = RunnerStatements(monkeypatch)
    assert run_worker(concurrency=1) == {"done": 1}
    records = [text for text in sent.statements if "INSERT INTO litejobs_jobstep" in text]
    assert len(records) == 3
    assert sent.transactions == 1  # the writing step's Mark and record, committed together
    assert set(JobStep.objects.values_list("name", flat=True)) == {"pure one", "pure two", "writes"}
    assert Mark.objects.filter(label="x:writes").count() == 1


def test_an_atomic_body_with_an_on_commit_callback_completes_before_it_runs(
    clock, run_worker, monkeypatch
):
    marks_after_commit.enqueue(label="sent")
    sent = RunnerStatements(monkeypatch)
    assert run_worker(concurrency=1) == {"done": 1}
    assert Mark.objects.get().label == "sent:done"  # the callback saw the job done
    # The completion alone before the callback: no BEGIN and no COMMIT round trip.
    assert "UPDATE litejobs_job" in sent.statements[0] and sent.transactions == 0
    assert sent.acknowledgements == []


def test_an_atomic_body_that_writes_completes_in_its_transaction(clock, run_worker, monkeypatch):
    record.enqueue(label="w")
    sent = RunnerStatements(monkeypatch)
    assert run_worker(concurrency=1) == {"done": 1}
    assert len(sent.statements) == 2 and sent.transactions == 1
    assert Mark.objects.get().label == "w"


def test_a_body_that_sends_nothing_is_refused_when_its_claim_moved_on(clock, run_worker):
    enqueued = loses_its_claim.enqueue(label="x")
    assert run_worker(concurrency=1) == {"refused": 1}
    job = Job.objects.get(pk=enqueued.id)
    assert (job.state, job.result, job.finished_at) == (JobState.RUNNING, None, None)


def test_a_batched_acknowledgement_refuses_only_the_stale_fence(clock):
    for label in "abc":
        record.enqueue(label=label)
    jobs = _claim()
    _steal(jobs[1].id)
    with connection.cursor() as cursor:
        done = transitions.complete_batch(cursor, [(job, clock.now(), None) for job in jobs])
    assert done == {jobs[0].id, jobs[2].id}
    states = dict(Job.objects.values_list("id", "state"))
    assert states == {jobs[0].id: "done", jobs[1].id: "running", jobs[2].id: "done"}


def test_batched_acknowledgements_answer_how_each_came_out(clock):
    """The acknowledgement thread gets each batch's outcomes back as values: nothing in the
    batch calls up into the settler that owns it."""
    for label in "abc":
        record.enqueue(label=label)
    jobs = _claim()
    _steal(jobs[1].id)
    acks = Acknowledgements(
        alias="default", outage=Outage(), stop_event=threading.Event(), batch=10, flush_seconds=60
    )
    for job in jobs:
        acks.add(job, None, time.monotonic())
    acks.close()  # closing flushes what is pending at once, without waiting for ACK_FLUSH
    batch = acks.take()
    assert [ack.job.id for ack in batch] == [job.id for job in jobs]
    outcomes = [(acked.job.id, acked.outcome) for acked in acks.write(batch)]
    assert outcomes == [(jobs[0].id, "done"), (jobs[1].id, "refused"), (jobs[2].id, "done")]
    assert acks.take() is None


def test_a_failed_ending_undoes_nothing_until_the_settler_writes_it(clock):
    """Building the ending of a run that failed for good is a value; the settler undoes the
    run's completed steps, then writes it dead."""
    enqueued = charge_card.enqueue(card_number="4000")  # one attempt: its failure is final
    [job] = _claim()
    steps = Steps(job=job, atomic=False, alias="default")
    steps.run("charge", lambda: 1, compensate=lambda _: Mark.objects.create(label="refunded").pk)
    ending = failed(job, catalog.run_of(job).definition, ValueError("declined"), steps=steps)
    assert ending.failure.state == JobState.DEAD
    assert not Mark.objects.exists()  # nothing undone yet
    settler = Settler(
        owner="test",
        alias="default",
        holdings=Holdings(),
        dispatcher=Dispatcher(1),
        handed_back=HandedBack(),
        outage=Outage(),
        stop_event=threading.Event(),
        lines=JobLines(),
    )
    settler.settle(job, ending, time.monotonic())
    assert Mark.objects.get().label == "refunded"
    assert Job.objects.get(pk=enqueued.id).state == JobState.DEAD
    assert settler.counts == {"dead": 1}


def test_the_fence_never_decreases_in_the_database(clock):
    record.enqueue(label="x")
    [job] = _claim()
    with pytest.raises(Exception, match="cannot decrease"), connect("default") as other:
        other.execute("UPDATE litejobs_job SET fence = fence - 1 WHERE id = %s", [job.id])


def test_a_terminal_job_changes_only_through_retry(clock, run_worker):
    enqueued = record.enqueue(label="x")
    run_worker()
    with connect("default") as other:
        with pytest.raises(psycopg.errors.CheckViolation, match="changes only through retry"):
            other.execute("UPDATE litejobs_job SET state = 'running' WHERE id = %s", [enqueued.id])
        other.execute(
            "UPDATE litejobs_job SET state = 'ready', attempts = 0 WHERE id = %s", [enqueued.id]
        )


def test_a_paused_queue_is_not_claimed_until_resumed(clock, run_worker):
    record.enqueue(label="x")
    QueueStateFactory(name="default")
    assert run_worker() == {}
    QueueState.objects.filter(name="default").update(paused=False)
    assert run_worker() == {"done": 1}


def test_workers_only_serve_their_queues(clock, run_worker):
    record.enqueue(label="x")
    assert run_worker(queues=["other"]) == {}
    assert run_worker(queues=["default"]) == {"done": 1}


#: A sensitive payload; each value is long enough that a random worker id or a timestamp in a
#: log line never holds it by chance (a three-digit value did).
SECRET_CARD = {
    "number": "4111111111111111",
    "holder": "Ada Lovelace",
    "cvc": 918273645,
    "tags": ["vip-9"],
}
SECRETS = ("4111111111111111", "Ada Lovelace", "918273645", "vip-9")


def assert_scrubbed(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, (secret, text)


def test_nested_sensitive_values_never_reach_any_stored_or_logged_error(clock, run_worker, caplog):
    from litejobs.models import JobStep
    from tests.testapp.jobs import secret_saga

    enqueued = secret_saga.enqueue(label="s", card=SECRET_CARD)
    with caplog.at_level("INFO", logger="litejobs"):
        run_worker()
    job = Job.objects.get(pk=enqueued.id)
    assert job.state == JobState.DEAD
    [attempt] = JobAttempt.objects.filter(job=job)
    steps = {step.name: step for step in JobStep.objects.filter(job=job)}
    texts = {
        "job error": job.error_message,
        "job traceback": job.error_traceback,
        "attempt error": attempt.error_message,
        "attempt traceback": attempt.error_traceback,
        "step error": steps["reserve"].error,
        "compensation step error": steps["compensate:charge"].error,
        "log": caplog.text,
    }
    for text in texts.values():
        assert_scrubbed(text)
    assert "compensations failed: compensate:charge: ValueError: refund to [redacted]" in (
        job.error_message
    )
    assert "no stock for [redacted]" in job.error_message
    assert "refund to [redacted] refused" in steps["compensate:charge"].error
    assert "compensation failed" in caplog.text


def test_a_runner_error_is_logged_without_sensitive_values(clock, run_worker, caplog, monkeypatch):
    from litejobs.worker import runner
    from tests.testapp.jobs import secret_saga

    def broken(job):
        raise RuntimeError(f"cannot run {job.payload}")

    monkeypatch.setattr(runner.catalog, "run_of", broken)
    secret_saga.enqueue(label="r", card=SECRET_CARD)
    with caplog.at_level("INFO", logger="litejobs"):
        run_worker()
    assert "job runner error" in caplog.text and "cannot run" in caplog.text
    assert_scrubbed(caplog.text)


def test_the_stored_message_is_scrubbed_after_compensation_failures_are_appended(
    clock, run_worker, monkeypatch
):
    from litejobs.jobs.steps import Steps
    from tests.testapp.jobs import secret_saga

    # Whatever a compensation failure says, the runner scrubs the message it is appended to.
    monkeypatch.setattr(Steps, "compensate", lambda self: [f"compensate:charge: {SECRET_CARD}"])
    enqueued = secret_saga.enqueue(label="c", card=SECRET_CARD)
    run_worker()
    job = Job.objects.get(pk=enqueued.id)
    assert "compensations failed: compensate:charge: {" in job.error_message
    assert_scrubbed(job.error_message)


def test_a_job_that_falls_due_while_the_claim_runs_is_due_at_once(clock, monkeypatch):
    """The main loop asks for the next due time after the instant its claim looked from: one
    asked after the claim returned would skip a job that fell due meanwhile until some later
    wake-up (a poll, or another job's)."""
    now = clock.now()
    first = record.enqueue(label="first", run_at=now)
    second = record.enqueue(label="second", run_at=now + timedelta(milliseconds=10))
    claim = claims.claim

    def slow_claim(cursor, **args):
        answer = claim(cursor, **args)
        clock.advance("50ms")  # the claim took a while: the second job fell due meanwhile
        return answer

    monkeypatch.setattr(claims, "claim", slow_claim)
    worker = Worker(concurrency=1, install_signals=False)
    taken = []
    runner = threading.Thread(target=lambda: taken.append(worker.dispatcher.next(lambda _: [])))
    runner.start()  # a runner finds nothing, then waits for a job
    try:
        wait_for(lambda: worker.dispatcher._waiting == 1, what="the runner to wait")
        worker._claim_due()
        runner.join(5)
        assert [job.id for job in taken] == [first.id]
        assert worker._timers.due == now + timedelta(milliseconds=10)  # due already: claimed next
        assert Job.objects.get(pk=second.id).state == JobState.SCHEDULED  # not claimed yet
    finally:
        worker.dispatcher.stop()
        worker.control.close()


def test_a_job_its_worker_no_longer_holds_is_reaped_by_its_own_heartbeat(clock):
    """An acknowledgement the worker could not write lets its job go: once its lease lapses,
    the worker's own heartbeat sends it back (it never reaps a job it still holds)."""
    record.enqueue(label="dropped")
    record.enqueue(label="held")
    dropped, held = sorted(_claim(), key=lambda job: job.id)
    clock.advance("2m")
    with connection.cursor() as cursor:
        answer = leases.heartbeat(
            cursor, worker=heartbeat_row(clock.now(), owner="test"), held=[held], reap=True
        )
    assert (answer.reaped, answer.renewed) == (1, {held.id})
    assert Job.objects.get(pk=dropped.id).state == JobState.FAILED
    assert Job.objects.get(pk=held.id).state == JobState.RUNNING


def _locks_in_id_order(write) -> bool:
    """Whether ``write(cursor, [second, first])`` locks the first job before the second, whatever
    the order it is given them in and the order they lie in: while another session holds the
    first, it waits holding nothing, so the second is free. Statements that lock one worker's
    jobs in one order never deadlock with each other."""
    record.enqueue(label="a")
    record.enqueue(label="b")
    first, second = sorted(_claim(), key=lambda job: job.id)
    # The second job now lies before the first in the table, as rows do once updated: a
    # statement that locks in its plan's order locks it first.
    Job.objects.filter(pk=first.id).update(priority=0)

    def run() -> None:
        with connect("default") as own, own.cursor() as cursor:
            write(cursor, [second, first])

    with connect("default") as blocker, connect("default") as probe:
        blocker.execute("BEGIN")
        blocker.execute("SELECT 1 FROM litejobs_job WHERE id = %s FOR UPDATE", [first.id])
        writer = threading.Thread(target=run)
        writer.start()
        time.sleep(0.5)  # it waits for the first job's lock now
        probe.execute("BEGIN")
        try:
            probe.execute("SELECT 1 FROM litejobs_job WHERE id = %s FOR UPDATE NOWAIT", [second.id])
            free = True
        except psycopg.errors.LockNotAvailable:
            free = False
        probe.execute("ROLLBACK")
        blocker.execute("ROLLBACK")
    writer.join(10)
    return free


def test_a_batched_acknowledgement_locks_its_jobs_in_id_order(clock):
    def acknowledge(cursor, jobs):
        transitions.complete_batch(cursor, [(job, clock.now(), None) for job in jobs])

    assert _locks_in_id_order(acknowledge)


def test_a_heartbeat_renews_leases_in_id_order(clock):
    def renew(cursor, jobs):
        worker = heartbeat_row(clock.now(), owner="test")
        leases.heartbeat(cursor, worker=worker, held=jobs, reap=False)

    assert _locks_in_id_order(renew)


def _heartbeat_due(clock, queues=()) -> bool:
    worker = heartbeat_row(clock.now())
    with connection.cursor() as cursor:
        return leases.heartbeat(cursor, worker=worker, held=[], reap=False, queues=queues).due


def test_a_heartbeat_says_whether_jobs_of_the_workers_queues_are_due(clock):
    assert not _heartbeat_due(clock)
    record.enqueue(label="later", run_at=clock.now() + timedelta(minutes=5))
    assert not _heartbeat_due(clock)  # not due yet
    record.enqueue(label="now")
    assert _heartbeat_due(clock)
    assert not _heartbeat_due(clock, queues=["other"])
    QueueStateFactory(name="default", paused=True)
    assert not _heartbeat_due(clock)  # its queue is paused


def test_an_idle_worker_finds_a_job_whose_wake_up_it_missed_at_its_next_heartbeat():
    """The heartbeat doubles as the backstop poll, so an idle worker sends one statement a
    heartbeat; here the poll is an hour away and the job's NOTIFY never comes."""
    with override_settings(LITEJOBS={"HEARTBEAT": "1s", "LEASE": "3s", "POLL_INTERVAL": "1h"}):
        worker = Worker(concurrency=1, install_signals=False)
        thread = threading.Thread(target=worker.run)
        thread.start()
        try:
            wait_for(worker.dispatcher.idle, what="the worker to idle")
            with pgtrigger.ignore("litejobs.Job:litejobs_notify_inserted"):
                enqueued = ReleasedJobFactory(name=record.name, payload={"label": "unannounced"})
            wait_for(
                lambda: Job.objects.get(pk=enqueued.id).state == JobState.DONE,
                timeout=5,
                what="the next heartbeat to find the job",
            )
        finally:
            worker.request_stop()
            thread.join(10)
