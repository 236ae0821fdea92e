"""A worker running in a background thread: heartbeats, cancellation, progress, lost leases."""

import threading
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from litejobs.jobs import leases
from litejobs.models import Job, JobAttempt, JobState
from litejobs.models import Worker as WorkerRow
from litejobs.runtime.listening import connect
from litejobs.worker import Worker
from tests.conftest import wait_for
from tests.factories import JobFactory
from tests.testapp.jobs import gated, per_account, reports_progress, slow_record
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def live_worker(settings):
    """A worker serving in a thread with a fast heartbeat; stopped at teardown."""
    settings.LITEJOBS = {"LEASE": "2s", "HEARTBEAT": "0.2s", "POLL_INTERVAL": "1s"}
    started = []

    def start(**options):
        options.setdefault("concurrency", 2)
        worker = Worker(install_signals=False, **options)
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        started.append((worker, thread))
        return worker

    yield start
    for worker, thread in started:
        worker.request_stop()
        thread.join(20)


def test_the_worker_row_shows_while_it_runs_and_goes_when_it_stops(live_worker):
    worker = live_worker()
    row = wait_for(lambda: WorkerRow.objects.filter(pk=worker.id).first(), what="the Worker row")
    assert (row.pid, row.concurrency, row.queues) == (worker.pid, 2, [])
    worker.request_stop()
    wait_for(lambda: not WorkerRow.objects.filter(pk=worker.id).exists(), what="row removed")


def test_an_operator_cancel_reaches_the_running_body(live_worker, tmp_path):
    gate = tmp_path / "gate"
    enqueued = gated.enqueue(label="c", gate=str(gate))
    live_worker()
    wait_for(lambda: Path(f"{gate}.started.1").exists(), what="the job to start")
    Job.objects.filter(pk=enqueued.id).update(cancel_requested=True)
    wait_for(lambda: Job.objects.get(pk=enqueued.id).state == JobState.CANCELLED)
    assert not Mark.objects.exists()  # the body stopped; its transaction rolled back


def test_a_lost_lease_cancels_the_body_and_refuses_its_completion(live_worker, tmp_path):
    gate = tmp_path / "gate"
    enqueued = gated.enqueue(label="lost", gate=str(gate))
    worker = live_worker()
    wait_for(lambda: Path(f"{gate}.started.1").exists(), what="the job to start")
    with connect("default") as other:  # another claim takes the job over
        other.execute(
            "UPDATE litejobs_job SET fence = nextval('litejobs_fence') WHERE id = %s",
            [enqueued.id],
        )
    wait_for(lambda: worker.counts.get("refused") == 1, what="the stale run to be refused")
    job = Job.objects.get(pk=enqueued.id)
    assert job.state == JobState.RUNNING  # the stale holder wrote nothing
    assert not Mark.objects.exists()  # and its body's write rolled back


def test_progress_is_written_while_the_job_runs(live_worker):
    enqueued = reports_progress.enqueue(label="p")
    live_worker()
    progress = wait_for(
        lambda: Job.objects.get(pk=enqueued.id).progress, what="progress to be written"
    )
    assert progress == {"done": 5, "total": 10, "note": "halfway"}
    wait_for(lambda: Job.objects.get(pk=enqueued.id).state == JobState.DONE)


def test_a_keyed_concurrency_limit_holds_per_key(live_worker):
    per_account.enqueue_many(
        [{"account": account, "label": str(i)} for account in "ab" for i in range(5)]
    )
    live_worker(concurrency=6)
    wait_for(lambda: Job.objects.filter(state=JobState.DONE).count() == 10, timeout=30)
    running, peak = {"a": 0, "b": 0}, {"a": 0, "b": 0}
    for label in Mark.objects.order_by("id").values_list("label", flat=True):
        account, event = label.split(":")
        running[account] += 1 if event == "start" else -1
        peak[account] = max(peak[account], running[account])
    assert peak == {"a": 2, "b": 2}


def test_the_heartbeat_reaps_jobs_of_a_lost_worker(live_worker, clock):
    from datetime import timedelta

    lapsed = clock.now() - timedelta(minutes=5)
    ghost = {  # running on a worker that is gone: its lease lapsed five minutes ago
        "state": JobState.RUNNING,
        "run_at": lapsed,
        "created_at": lapsed,
        "lease_owner": "ghost",
        "lease_expires_at": lapsed,
        "fence": 1,
    }
    retried = JobFactory(key="r", label="r", **ghost)
    cancelled = JobFactory(key="c", label="c", cancel_requested=True, **ghost)
    spent = JobFactory(key="s", label="s", attempts=3, **ghost)
    live_worker(queues=["elsewhere"])  # reaps, but runs nothing
    wait_for(lambda: not Job.objects.filter(state=JobState.RUNNING).exists(), what="reaping")
    states = dict(Job.objects.values_list("key", "state"))
    assert states == {"r": JobState.FAILED, "c": JobState.CANCELLED, "s": JobState.DEAD}
    assert set(JobAttempt.objects.values_list("job_id", "outcome")) == {
        (retried.id, "lease_expired"),
        (cancelled.id, "lease_expired"),
        (spent.id, "lease_expired"),
    }


# Lease renewal: a run lives as long as its worker renews it, and no longer --------------------


def _db_still_leases(job_id) -> bool:
    """Whether the job's lease is still live at the database, on the database's clock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lease_expires_at > statement_timestamp() FROM litejobs_job WHERE id = %s",
            [job_id],
        )
        return cursor.fetchone()[0]


def _cut_off_reason(worker, job_id):
    held = worker.holdings.get(job_id)
    return held.ctx.cancel_reason if held is not None and held.ctx is not None else None


def _heartbeats_fail(monkeypatch, failing: threading.Event, answering: threading.Event):
    """While ``failing`` is set, heartbeats fail as in an outage; while ``answering`` is clear,
    they hang first (a dropped network)."""
    real = leases.heartbeat

    def heartbeat(cursor, **kwargs):
        answering.wait(30)
        if failing.is_set():
            raise psycopg.OperationalError("connection to server lost (test)")
        return real(cursor, **kwargs)

    monkeypatch.setattr(leases, "heartbeat", heartbeat)


@pytest.mark.parametrize("how", ["fails", "hangs"])
def test_a_worker_that_cannot_renew_cancels_the_run_before_its_lease_lapses(
    live_worker, tmp_path, monkeypatch, how
):
    gate = tmp_path / "gate"
    enqueued = gated.enqueue(label="cut", gate=str(gate))
    failing, answering = threading.Event(), threading.Event()
    answering.set()
    _heartbeats_fail(monkeypatch, failing, answering)
    worker = live_worker(concurrency=1)
    wait_for(lambda: Path(f"{gate}.started.1").exists(), what="the job to start")
    failing.set()
    if how == "hangs":
        answering.clear()  # the main loop sits in its next heartbeat
    wait_for(
        lambda: _cut_off_reason(worker, enqueued.id) == "lease_lost",
        timeout=10,
        interval=0.01,
        what="the run to be cancelled",
    )
    assert _db_still_leases(enqueued.id)  # cancelled while the lease still held
    gate.touch()  # a late body would now complete: nothing may be written for it
    wait_for(lambda: not _db_still_leases(enqueued.id), what="the lease to lapse")
    job = Job.objects.get(pk=enqueued.id)
    assert (job.state, job.attempts) == (JobState.RUNNING, 1)
    assert not Mark.objects.exists()

    failing.clear()  # the database is back: the job goes back uncounted, then runs
    answering.set()
    wait_for(lambda: Job.objects.get(pk=enqueued.id).state == JobState.DONE, timeout=20)
    assert Job.objects.get(pk=enqueued.id).attempts == 1
    assert not JobAttempt.objects.exists()  # the outage cost no attempt
    assert worker.counts.get("released") == 1


def test_a_run_longer_than_the_lease_completes_while_it_is_renewed(live_worker):
    enqueued = slow_record.enqueue(label="long", value=1, seconds=3.0)  # LEASE is 2s here
    worker = live_worker(concurrency=1)
    wait_for(lambda: Job.objects.get(pk=enqueued.id).state == JobState.DONE, timeout=20)
    assert Job.objects.get(pk=enqueued.id).attempts == 1
    assert not JobAttempt.objects.exists()
    assert worker.counts == {"done": 1}
