"""Settle hooks across real worker processes: a worker SIGKILLed while it runs a hook loses
nothing — the hook's call was committed with the job's outcome, and another worker runs it."""

import os
import signal

import pytest

from litejobs.models import Job, JobState
from litejobs.models.hooks import SETTLED_JOB
from tests.conftest import wait_for
from tests.testapp.hooked import hooked_slow_hook
from tests.testapp.models import Mark

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = {"LEASE": "3s", "HEARTBEAT": "1s", "POLL_INTERVAL": "1s"}


def _worker(processes, gate, sleep: str):
    env = {**processes.env(**FAST), "HOOK_GATE": str(gate), "HOOK_SLEEP": sleep}
    return processes.start("runworker", "--concurrency", "1", env=env, name="worker")


def test_a_worker_killed_between_the_settle_and_the_hook_loses_no_call(processes, tmp_path):
    gate = tmp_path / "hook"
    enqueued = hooked_slow_hook.enqueue(label="killed")
    first = _worker(processes, gate, sleep="60")
    wait_for(lambda: (tmp_path / "hook.started.1").exists(), what="the hook's first run")
    # The job's outcome and the hook's call are both committed before the hook runs.
    assert Job.objects.get(pk=enqueued.id).state == JobState.DONE
    hook_job = Job.objects.get(name=SETTLED_JOB)
    assert (hook_job.state, hook_job.payload["job_id"]) == (JobState.RUNNING, enqueued.id)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)

    second = _worker(processes, gate, sleep="0")
    wait_for(
        lambda: Job.objects.get(pk=hook_job.id).state == JobState.DONE,
        timeout=60,
        what="another worker to run the hook",
    )
    [ran] = Mark.objects.filter(label="hook-ran")
    assert ran.value == second.pid
    # The re-run is recognisable: the same ending's key, its second attempt.
    assert ran.note == f"{hook_job.key}:2"
    job = Job.objects.get(pk=enqueued.id)
    assert (job.state, job.result, job.attempts) == (JobState.DONE, "fine", 1)
    assert Job.objects.filter(name=SETTLED_JOB).count() == 1
