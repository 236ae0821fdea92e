"""Jobs that wait on others: held until each upstream job has ended, then released, run
anyway, cancelled or skipped as their on_upstream_failure says; ended and missing upstream
jobs resolved at enqueue; a cycle refused."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from litejobs.batches import DependencyCycle, DependencyInvalid
from litejobs.jobs import holdups, operations
from litejobs.models import Job
from tests.testapp.batchjobs import after, child
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db(transaction=True)


def state(enqueued) -> str:
    return Job.objects.get(pk=enqueued.id).state


def test_waits_until_every_upstream_has_ended(clock, run_worker):
    first = child.enqueue(label="u1")
    second = child.enqueue(label="u2", delay="1h")
    waiting = after.enqueue(label="w", depends_on=[first, second.id])
    assert state(waiting) == "waiting"
    found = holdups.holdup_of(Job.objects.get(pk=waiting.id))
    assert found is not None and found.code == "waiting-for-dependencies"
    assert found.as_json()["upstream"] == [
        {"id": first.id, "state": "ready"},
        {"id": second.id, "state": "scheduled"},
    ]
    run_worker()
    assert state(waiting) == "waiting"
    assert not Mark.objects.filter(label="after:w").exists()
    operations.promote(second.id, by="test")
    run_worker()
    run_worker()
    assert Mark.objects.filter(label="after:w").count() == 1


@pytest.mark.parametrize(
    ("policy", "ends", "ran", "downstream_runs"),
    [
        ("cancel", "cancelled", False, False),
        ("run", "done", True, True),
        ("skip", "cancelled", False, True),
    ],
)
def test_upstream_failure_policies(clock, run_worker, policy, ends, ran, downstream_runs):
    upstream = child.enqueue(label="bad", outcome="fail")
    middle = after.enqueue(label="m", depends_on=[upstream], on_upstream_failure=policy)
    after.enqueue(label="last", depends_on=[middle])
    run_worker()
    run_worker()
    assert state(upstream) == "dead"
    assert state(middle) == ends
    assert Mark.objects.filter(label="after:m").exists() == ran
    assert Mark.objects.filter(label="after:last").exists() == downstream_runs
    if not ran:
        expected = "litejobs.UpstreamSkipped" if policy == "skip" else "litejobs.UpstreamFailed"
        assert Job.objects.get(pk=middle.id).error_class == expected


def test_ended_and_missing_upstreams_are_resolved_at_enqueue(clock, run_worker):
    done = child.enqueue(label="done")
    dead = child.enqueue(label="dead", outcome="fail")
    run_worker()
    assert state(done) == "done" and state(dead) == "dead"
    runs = after.enqueue(label="ok", depends_on=[done, 999_999_999])
    assert state(runs) == "ready"
    cancelled = after.enqueue(label="no", depends_on=[done, dead])
    assert state(cancelled) == "cancelled"
    run_worker()
    assert Mark.objects.filter(label="after:ok").count() == 1


def test_a_cycle_is_refused(clock):
    first = after.enqueue(label="a")
    second = after.enqueue(label="b", depends_on=[first])
    third = after.enqueue(label="c", depends_on=[second])
    with pytest.raises(DependencyCycle) as refused:
        after.enqueue(label="a", depends_on=[third])
    assert refused.value.code == "dependency-cycle"
    with pytest.raises(DependencyCycle):
        after.enqueue(label="a", depends_on=[first])
    assert Job.objects.count() == 3
    assert after.enqueue(label="a", depends_on=[child.enqueue(label="free")]).deduped


def test_bad_depends_on_is_refused_before_anything_is_written(clock):
    with pytest.raises(DependencyInvalid) as refused:
        after.enqueue(label="x", depends_on=["12"])
    assert refused.value.code == "depends-on-invalid"
    with pytest.raises(DependencyInvalid) as refused:
        after.enqueue(label="x", depends_on=[1], on_upstream_failure="maybe")
    assert refused.value.code == "upstream-policy-invalid"
    assert not Job.objects.exists()


def test_two_upstreams_ending_at_once_release_their_dependant(clock, run_worker):
    first = child.enqueue(label="race1")
    second = child.enqueue(label="race2")
    waiting = after.enqueue(label="both", depends_on=[first, second])
    began = threading.Event()

    def cancel(job_id: int, hold: float) -> None:
        try:
            with transaction.atomic():
                operations.cancel(job_id, by="race")
                began.set()
                time.sleep(hold)
        finally:
            connection.close()

    one = threading.Thread(target=cancel, args=(first.id, 0.5))
    one.start()
    assert began.wait(5)
    two = threading.Thread(target=cancel, args=(second.id, 0.0))
    two.start()
    one.join(10)
    two.join(10)
    assert state(waiting) == "cancelled"
    assert Job.objects.get(pk=waiting.id).error_class == "litejobs.UpstreamFailed"
