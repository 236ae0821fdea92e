"""Batches with one callback: children join in the caller's transaction, the callback is
released exactly once by the transaction that ends the last child, with the counts."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

import litejobs
from litejobs.batches import BatchClosed, BatchInvalid
from litejobs.jobs import operations
from litejobs.models import Batch, Job
from tests.testapp.batchjobs import alarm, child, dropped, parent, summary
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db(transaction=True)


def marks(prefix: str) -> list[str]:
    return sorted(Mark.objects.filter(label__startswith=prefix).values_list("label", flat=True))


def test_callback_once_with_counts(clock, run_worker):
    with litejobs.batch(on_complete=summary, on_failure=alarm) as b:
        child.enqueue(label="a")
        child.enqueue(label="b", outcome="fail")
        cancelled = child.enqueue(label="c")
        child.enqueue_many([{"label": "d"}, {"label": "e"}])
    operations.cancel(cancelled.id, by="test")
    record = b.record()
    assert (record.total, record.pending, record.cancelled) == (5, 4, 1)
    run_worker()
    run_worker()
    assert marks("summary:") == [f"summary:{b.id}:3:1:1"]
    assert marks("alarm:") == [f"alarm:{b.id}"]
    record = b.record()
    assert record.state == "completed" and record.pending == 0


def test_rolled_back_block_leaves_nothing(clock):
    with pytest.raises(RuntimeError), transaction.atomic():
        with litejobs.batch(on_complete=summary):
            child.enqueue(label="gone")
        raise RuntimeError("the caller's transaction rolls back")
    with pytest.raises(RuntimeError), litejobs.batch(on_complete=summary):
        child.enqueue(label="gone-too")
        raise RuntimeError("the block's own error")
    assert not Batch.objects.exists()
    assert not Job.objects.exists()


def test_children_added_from_inside_a_child(clock, run_worker):
    with litejobs.batch(on_complete=summary) as b:
        parent.enqueue(label="p", extra=3)
    # A worker run with `once` stops when a claim finds nothing due, which can come before the
    # last child's ending releases the callback: run again until it has run (at most five).
    for _ in range(5):
        run_worker()
        if marks("summary:"):
            break
    assert marks("child:p.") == ["child:p.0", "child:p.1", "child:p.2"]
    assert marks("summary:") == [f"summary:{b.id}:4:0:0"]
    assert b.record().total == 4


def test_operator_retry_after_callback_does_not_call_it_again(clock, run_worker):
    with litejobs.batch(on_complete=summary) as b:
        failing = child.enqueue(label="x", outcome="fail")
        child.enqueue(label="y")
    run_worker()
    run_worker()
    assert marks("summary:") == [f"summary:{b.id}:1:1:0"]
    operations.retry(failing.id, by="test")
    run_worker()
    assert Job.objects.get(pk=failing.id).state == "dead"
    assert marks("summary:") == [f"summary:{b.id}:1:1:0"]
    assert Job.objects.filter(name=summary.name).count() == 1
    assert b.record().retried_after == 1


def test_retry_before_callback_counts_the_child_once(clock, run_worker):
    with litejobs.batch(on_complete=summary) as b:
        failing = child.enqueue(label="x", outcome="fail")
        waiting = child.enqueue(label="y", delay="1h")
    run_worker()
    operations.retry(failing.id, by="test")
    assert b.record().pending == 2
    operations.cancel(failing.id, by="test")
    operations.cancel(waiting.id, by="test")
    run_worker()
    assert marks("summary:") == [f"summary:{b.id}:0:0:2"]


def test_empty_batch_calls_back_at_once(clock, run_worker):
    with litejobs.batch(on_complete=summary) as b:
        pass
    run_worker()
    assert marks("summary:") == [f"summary:{b.id}:0:0:0"]


def test_closed_batch_refuses_children(clock, run_worker):
    with litejobs.batch(on_complete=summary) as b:
        child.enqueue(label="only")
    run_worker()
    run_worker()
    with pytest.raises(BatchClosed):
        b.add(child, label="late")
    assert not Job.objects.filter(key="child:late").exists()


def test_callback_must_take_the_counts(clock):
    with pytest.raises(BatchInvalid) as refused:
        litejobs.batch(on_complete=child)
    assert refused.value.code == "batch-callback-invalid"


def _settle_in_thread(job_id: int, started, hold: float) -> threading.Thread:
    """Cancel ``job_id`` in a transaction of its own thread, held open ``hold`` seconds."""

    def run() -> None:
        try:
            with transaction.atomic():
                operations.cancel(job_id, by="race")
                started.set()
                time.sleep(hold)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_two_last_children_ending_at_once_call_back_once(clock, run_worker):
    with litejobs.batch(on_complete=summary) as b:
        first = child.enqueue(label="r1")
        second = child.enqueue(label="r2")
    one, two = threading.Event(), threading.Event()
    a = _settle_in_thread(first.id, one, 0.5)
    assert one.wait(5)
    c = _settle_in_thread(second.id, two, 0.0)
    a.join(10)
    c.join(10)
    assert Job.objects.filter(pk__in=[first.id, second.id], state="cancelled").count() == 2
    run_worker()
    assert marks("summary:") == [f"summary:{b.id}:0:0:2"]
    assert Job.objects.filter(name=summary.name, state="done").count() == 1


def test_a_dropped_child_counts_dead_and_a_purge_counts_nothing(clock, run_worker):
    with litejobs.batch(on_complete=summary) as b:
        gone = dropped.enqueue(label="d")
        child.enqueue(label="kept")
    run_worker()
    run_worker()
    assert not Job.objects.filter(pk=gone.id).exists()
    assert marks("summary:") == [f"summary:{b.id}:1:1:0"]
    Job.objects.filter(batch_id=b.id).delete()  # what a purge does: ended jobs only
    record = b.record()
    assert (record.done, record.dead, record.retried_after) == (1, 1, 0)


def test_housekeeping_purges_completed_batches_and_the_dependencies_of_purged_jobs(
    clock, run_worker
):
    from datetime import timedelta

    from litejobs.batches import retention
    from litejobs.models import JobDependency
    from tests.testapp.batchjobs import after

    with litejobs.batch(on_complete=summary) as b:
        upstream = child.enqueue(label="u")
    after.enqueue(label="w", depends_on=[upstream])
    run_worker()
    run_worker()
    assert b.record().state == "completed" and JobDependency.objects.count() == 1
    later = clock.now() + timedelta(days=31)
    assert retention.purge(by="test", should_stop=lambda: False, now=later) == {
        "batches": 1,
        "dependencies": 0,
    }
    Job.objects.all().delete()
    counts = retention.purge(by="test", should_stop=lambda: False, now=later)
    assert counts == {"batches": 0, "dependencies": 1}
