"""Real ``runworker`` processes: SIGKILL, SIGTERM drains, and fleet-wide limits."""

import os
import signal
import time
from datetime import timedelta
from pathlib import Path

import pytest

from litejobs import clock as system_clock
from litejobs.models import Job, JobAttempt, JobState, JobStep
from litejobs.models import Worker as WorkerRow
from tests.conftest import wait_for
from tests.testapp.jobs import (
    crash_proof,
    gated,
    gated_outside,
    gated_unfenced,
    held_for,
    limited,
    record,
    stamped,
)
from tests.testapp.models import Mark

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = {"LEASE": "3s", "HEARTBEAT": "1s", "POLL_INTERVAL": "2s"}


def state_of(job_id):
    return Job.objects.get(pk=job_id).state


def test_a_worker_killed_mid_job_loses_nothing_and_the_job_completes_exactly_once(
    processes, tmp_path
):
    gate = tmp_path / "gate"
    enqueued = gated.enqueue(label="killed", gate=str(gate))
    first = processes.worker("--concurrency", "1", **FAST)
    wait_for(lambda: Path(f"{gate}.started.1").exists(), what="attempt 1 to start")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)

    processes.worker("--concurrency", "1", **FAST)
    wait_for(lambda: Path(f"{gate}.started.2").exists(), what="attempt 2 on the second worker")
    gate.touch()
    wait_for(lambda: state_of(enqueued.id) == JobState.DONE, what="the job to complete")

    job = Job.objects.get(pk=enqueued.id)
    assert job.attempts == 2
    # The killed attempt's write rolled back with its transaction: one effect in all.
    assert list(Mark.objects.filter(label="killed").values_list("value", flat=True)) == [2]
    [lost] = JobAttempt.objects.filter(job=job)
    assert (lost.number, lost.outcome) == (1, "lease_expired")


def test_an_unfenced_job_killed_before_its_batched_ack_runs_again_and_is_done_once(
    processes, tmp_path
):
    gate = tmp_path / "gate"
    enqueued = gated_unfenced.enqueue(label="unacked", gate=str(gate))
    _killed_before_the_ack_flushes(processes, gate, enqueued.id)
    # At-least-once: the body ran twice, the job is recorded done once.
    assert sorted(Mark.objects.filter(label="unacked").values_list("value", flat=True)) == [1, 2]
    assert Job.objects.filter(key="gated-unfenced:unacked").count() == 1


def test_an_atomic_job_that_sent_no_statement_killed_before_its_ack_runs_again(processes, tmp_path):
    """Its completion joined the batched acknowledgement: nothing could commit with it."""
    gate = tmp_path / "gate"
    enqueued = gated_outside.enqueue(label="outside", gate=str(gate))
    _killed_before_the_ack_flushes(processes, gate, enqueued.id)
    assert Path(f"{gate}.done.2").exists()  # its outside effect happened twice
    assert Job.objects.get(pk=enqueued.id).attempts == 2


def _killed_before_the_ack_flushes(processes, gate, job_id) -> None:
    """Run the gated job on a worker whose acknowledgements never flush, SIGKILL it after the
    body, and let a second worker run it to done."""
    # This worker's acknowledgements never flush: the batch waits for 1,000 jobs or an hour.
    first = processes.worker("--concurrency", "1", ACK_FLUSH="1h", ACK_BATCH=1000, **FAST)
    wait_for(lambda: Path(f"{gate}.done.1").exists(), what="the body to finish")
    assert state_of(job_id) == JobState.RUNNING
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)

    processes.worker("--concurrency", "1", **FAST)
    wait_for(lambda: state_of(job_id) == JobState.DONE, what="the job to complete")


def test_sigterm_drains_an_interrupted_job_back_to_ready_uncounted(processes, tmp_path):
    gate = tmp_path / "gate"
    enqueued = gated.enqueue(label="drained", gate=str(gate))
    worker = processes.worker("--concurrency", "1", DRAIN_TIMEOUT="0.5s", **FAST)
    wait_for(lambda: Path(f"{gate}.started.1").exists(), what="the job to start")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(20) == 0, processes.log(worker)

    job = Job.objects.get(pk=enqueued.id)
    assert (job.state, job.attempts) == (JobState.READY, 0)
    assert not JobAttempt.objects.exists()
    assert not Mark.objects.exists()
    assert "job released" in processes.log(worker)

    gate.touch()
    processes.worker("--concurrency", "1", **FAST)
    wait_for(lambda: state_of(enqueued.id) == JobState.DONE, what="the job to complete")
    assert Job.objects.get(pk=enqueued.id).attempts == 1


#: How long the drained job keeps running after SIGTERM: past a heartbeat and a lease.
RUNS_ON = 4.0


def test_sigterm_lets_a_running_job_finish_within_the_drain_timeout(processes, tmp_path):
    gate = tmp_path / "gate"
    enqueued = gated.enqueue(label="finishes", gate=str(gate))
    worker = processes.worker("--concurrency", "1", DRAIN_TIMEOUT="30s", **FAST)
    wait_for(lambda: Path(f"{gate}.started.1").exists(), what="the job to start")
    worker.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    # The body runs on, uncancelled, while the worker drains (renewing its lease meanwhile).
    wait_for(lambda: time.monotonic() - signalled > RUNS_ON, timeout=RUNS_ON + 1, interval=0.1)
    assert worker.poll() is None, processes.log(worker)
    assert state_of(enqueued.id) == JobState.RUNNING
    gate.touch()
    assert worker.wait(20) == 0
    job = Job.objects.get(pk=enqueued.id)
    assert (job.state, job.attempts) == (JobState.DONE, 1)
    assert list(Mark.objects.values_list("label", "value")) == [("finishes", 1)]
    assert "job released" not in processes.log(worker)


def test_a_concurrency_limit_holds_across_two_worker_processes(processes):
    limited.enqueue_many([{"label": f"j{i}", "seconds": 0.3} for i in range(6)])
    for _ in range(2):  # neither may take more than half: both must compete for the slot
        processes.worker("--concurrency", "3", "--max-jobs", "3", **FAST)
    wait_for(
        lambda: Job.objects.filter(state=JobState.DONE).count() == 6,
        timeout=60,
        what="all limited jobs",
    )
    # Marks get ids when written, in the order runs started and ended: with a limit of 1,
    # every start is followed by its own end before the next start.
    labels = list(Mark.objects.order_by("id").values_list("label", flat=True))
    assert len(labels) == 12
    for start, end in zip(labels[::2], labels[1::2], strict=True):
        assert start.endswith(":start") and end == start.replace(":start", ":end")
    assert len(set(Mark.objects.values_list("value", flat=True))) == 2  # both processes ran jobs


def test_a_process_pool_runs_jobs_in_separate_processes_and_drains_on_sigterm(processes):
    record.enqueue_many([{"label": f"p{i}", "value": i} for i in range(20)])
    pool = processes.worker("--pool", "processes", "--concurrency", "2", **FAST)
    wait_for(lambda: Job.objects.filter(state=JobState.DONE).count() == 20, what="the pool")
    wait_for(lambda: WorkerRow.objects.count() == 2, what="two worker rows")
    assert len({row.pid for row in WorkerRow.objects.all()} - {pool.pid}) == 2
    pool.send_signal(signal.SIGTERM)
    assert pool.wait(30) == 0
    assert WorkerRow.objects.count() == 0  # both children drained and removed their rows


def test_a_worker_killed_inside_and_after_every_step_leaves_each_effect_exactly_once(
    processes, tmp_path
):
    enqueued = crash_proof.enqueue(label="cp", pause_dir=str(tmp_path))
    for number in range(1, 5):
        for boundary in (f"in-{number}", f"after-{number}"):
            (tmp_path / f"pause-{boundary}").touch()
            worker = processes.worker("--concurrency", "1", **FAST)
            wait_for(
                lambda boundary=boundary: (tmp_path / f"reached-{boundary}").exists(),
                timeout=60,
                what=f"the job to reach {boundary}",
            )
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(10)
            (tmp_path / f"pause-{boundary}").unlink()
    processes.worker("--concurrency", "1", **FAST)
    wait_for(lambda: state_of(enqueued.id) == JobState.DONE, timeout=60, what="completion")
    effects = list(Mark.objects.filter(label__startswith="cp:").values_list("label", flat=True))
    assert sorted(effects) == ["cp:1", "cp:2", "cp:3", "cp:4"]  # each exactly once
    executions = dict(JobStep.objects.filter(job_id=enqueued.id).values_list("name", "executions"))
    # A run killed inside a step records nothing (its write rolled back with it); the step's
    # one recorded execution is the run that completed it, replayed from storage afterwards.
    assert executions == {f"step-{n}": 1 for n in range(1, 5)}
    assert all((tmp_path / f"reached-in-{n}").exists() for n in range(1, 5))


def test_delayed_jobs_and_retries_start_within_a_second_of_their_time(processes):
    """An idle worker (its backstop poll 30 s away) starts each job within 1 s of its run_at:
    delayed ones, a retry by the policy's backoff, and one after RetryAfter."""
    processes.worker("--concurrency", "2")
    wait_for(lambda: WorkerRow.objects.exists(), what="the worker to start")
    now = system_clock.now()
    for seconds in (1, 2, 3):
        stamped.enqueue(label=f"delayed-{seconds}s", run_at=now + timedelta(seconds=seconds))
    stamped.enqueue(label="retried", fail_first="error")  # again 2 s after it fails
    stamped.enqueue(label="retry-after", fail_first="retry_after")  # again after 1.5 s
    wait_for(lambda: Mark.objects.count() == 5, what="every job to start")
    lateness = {}
    for mark in Mark.objects.all():
        job = Job.objects.get(key=f"stamped:{mark.label}")  # run_at: the time it was due
        lateness[mark.label] = float(mark.note) - job.run_at.timestamp()
    assert all(0 <= late < 1.0 for late in lateness.values()), lateness
    assert dict(Mark.objects.values_list("label", "value")) == {
        "delayed-1s": 1,
        "delayed-2s": 1,
        "delayed-3s": 1,
        "retried": 2,
        "retry-after": 2,
    }


def test_workers_whose_clocks_disagree_never_reap_each_others_healthy_jobs(processes):
    """Leases are written and compared on the database's clock: a host 120 s ahead (well
    past LEASE) and a normal one each keep their own job to completion."""
    fast = {**FAST, "CLAIM_BATCH": 1}
    normal = processes.worker("--concurrency", "1", **fast)
    wait_for(lambda: WorkerRow.objects.filter(pid=normal.pid).exists(), what="the normal worker")
    first = held_for.enqueue(label="normal", seconds=7)
    wait_for(lambda: state_of(first.id) == JobState.RUNNING, what="the normal worker's job")
    ahead = processes.skewed_worker("+120s", "--concurrency", "1", **fast)
    # faketime runs the worker as its child: find it by its Worker row.
    skewed_pid = wait_for(
        lambda: WorkerRow.objects.exclude(pid=normal.pid).values_list("pid", flat=True).first(),
        what="the skewed worker",
    )
    second = held_for.enqueue(label="ahead", seconds=7)
    wait_for(lambda: state_of(second.id) == JobState.RUNNING, what="the skewed worker's job")
    wait_for(
        lambda: {state_of(first.id), state_of(second.id)} == {JobState.DONE},
        timeout=60,
        what="both jobs",
    )
    assert dict(Mark.objects.values_list("label", "value")) == {
        "normal": normal.pid,
        "ahead": skewed_pid,
    }
    assert Job.objects.get(pk=first.id).attempts == Job.objects.get(pk=second.id).attempts == 1
    assert not JobAttempt.objects.exists(), list(JobAttempt.objects.values())
    assert "reaped" not in processes.log(normal) + processes.log(ahead)
