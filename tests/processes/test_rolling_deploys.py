"""Rolling deploys with real processes: a worker of the old release hands back what only the new
one can run, and the new one runs it."""

import os
import signal

import pytest

from litejobs.models import Job, JobAttempt, JobState
from tests.conftest import wait_for
from tests.factories import ReleasedJobFactory
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db(transaction=True)


FAST = {"LEASE": "3s", "HEARTBEAT": "1s", "POLL_INTERVAL": "2s"}


@pytest.mark.slow
def test_a_worker_of_the_old_release_hands_jobs_back_to_one_of_the_new(processes):
    old = processes.worker("--concurrency", "1", TEST_RELEASE="old", **FAST)
    added = ReleasedJobFactory(name="release.added", payload={"label": "added"})
    newer = ReleasedJobFactory(name="release.shaped", payload={"label": "v2"}, version=2)
    wait_for(
        lambda: (
            Job.objects.filter(pk__in=[added.pk, newer.pk], handed_back_at__isnull=False)
            .exclude(state=JobState.RUNNING)
            .count()
            == 2
        ),
        what="the old worker to hand both jobs back",
    )
    assert not Mark.objects.exists()
    assert "job handed back" in processes.log(old)

    new = processes.worker("--concurrency", "1", TEST_RELEASE="new", **FAST)
    # The old worker, still running, leaves what it handed back to the others: the new one
    # takes each as it falls due again, a second after its hand-back.
    wait_for(
        lambda: Job.objects.filter(state=JobState.DONE).count() == 2,
        timeout=30,
        what="the new worker to run both",
    )
    assert processes.log(old).count("job handed back") == 2  # once each
    os.killpg(old.pid, signal.SIGKILL)
    old.wait(10)
    older = ReleasedJobFactory(name="release.shaped", payload={"name": "v1"}, version=1)
    wait_for(lambda: Job.objects.get(pk=older.pk).state == JobState.DONE, what="the v1 payload")

    marks = dict(Mark.objects.values_list("label", "value"))
    assert marks == {"added": new.pid, "shaped:v2": new.pid, "shaped:v1": new.pid}
    for row in Job.objects.all():
        assert row.attempts == 1  # the hand-backs cost no attempt
    assert not JobAttempt.objects.exists()
