"""A batch of 1,000 children across two real worker processes, one SIGKILLed midway: its
callback is called exactly once, with the counts the database holds."""

from __future__ import annotations

import os
import signal

import pytest
from django.db.models import Count

import litejobs
from litejobs.jobs import operations
from litejobs.models import Job
from tests.conftest import wait_for
from tests.testapp.batchjobs import child, summary
from tests.testapp.models import Mark

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = {"LEASE": "3s", "HEARTBEAT": "1s", "POLL_INTERVAL": "1s"}


def ended(batch_id: int) -> int:
    return Job.objects.filter(batch_id=batch_id, state__in=("done", "dead", "cancelled")).count()


def test_a_batch_across_two_workers_one_killed_calls_back_once_with_the_counts(processes):
    inputs = [
        {"label": f"k{n}", "outcome": "fail" if n % 10 == 3 else "done", "seconds": 0.02}
        for n in range(1000)
    ]
    with litejobs.batch(on_complete=summary) as b:
        enqueued = child.enqueue_many(inputs)
    for job in enqueued[5::10]:  # 100 cancelled before they ever ran
        operations.cancel(job.id, by="test")
    first = processes.worker("--concurrency", "4", **FAST)
    processes.worker("--concurrency", "4", **FAST)
    wait_for(lambda: ended(b.id) >= 400, timeout=60, what="400 children to end")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)
    assert ended(b.id) < 1000, "the worker was killed midway"
    wait_for(
        lambda: Job.objects.filter(name=summary.name, state="done").exists(),
        timeout=120,
        what="the callback to run",
    )
    states = dict(Job.objects.filter(batch_id=b.id).values_list("state").annotate(n=Count("pk")))
    assert sum(states.values()) == 1000 and states["cancelled"] == 100
    done, dead = states.get("done", 0), states.get("dead", 0)
    assert dead >= 90
    calls = list(Mark.objects.filter(label__startswith="summary:").values_list("label", flat=True))
    assert calls == [f"summary:{b.id}:{done}:{dead}:100"]
    assert Job.objects.filter(name=summary.name).count() == 1
    record = b.record()
    assert (record.pending, record.done, record.dead, record.cancelled) == (0, done, dead, 100)


def test_a_10000_child_batch_calls_back_within_a_second_of_its_last_child(processes):
    """The callback is released by the transaction that ends the last child: a worker starts it
    at once (its release NOTIFYs). Figure printed for the how-to page."""
    with litejobs.batch(on_complete=summary) as b:
        for page in range(10):
            child.enqueue_many([{"label": f"b{page}.{n}"} for n in range(1000)])
    processes.worker("--concurrency", "8", **FAST)
    processes.worker("--concurrency", "8", **FAST)
    wait_for(
        lambda: Job.objects.filter(name=summary.name, state="done").exists(),
        timeout=300,
        what="the callback to run",
    )
    record = b.record()
    callback = Job.objects.get(pk=record.on_complete_job_id)
    last = Job.objects.filter(batch_id=b.id).order_by("-finished_at").first()
    assert record.done == 10_000 and last is not None
    latency = (callback.started_at - last.finished_at).total_seconds()
    print(f"10,000-child batch: callback started {latency:.3f}s after the last child ended")
    assert 0 <= latency <= 1.0
