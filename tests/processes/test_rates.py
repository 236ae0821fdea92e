"""A rate limit across real ``runworker`` processes: never more starts in any window than the
limit, counted from the jobs' start instants in the database, and no attempt spent."""

from datetime import timedelta

import pytest

from litejobs.models import Job, JobState
from tests.conftest import wait_for
from tests.testapp.jobs import rated

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = {"LEASE": "3s", "HEARTBEAT": "1s", "POLL_INTERVAL": "2s"}
#: ``rated``'s rate: five starts in any second.
LIMIT, PER = 5, timedelta(seconds=1)
JOBS = 40


def test_a_rate_holds_across_four_worker_processes_under_load(processes):
    rated.enqueue_many([{"n": n} for n in range(JOBS)])
    for _ in range(4):
        processes.worker("--concurrency", "4", **FAST)
    wait_for(
        lambda: Job.objects.filter(state=JobState.DONE).count() == JOBS,
        timeout=60,
        what="every rate-limited job",
    )
    started = sorted(Job.objects.values_list("started_at", flat=True))
    # Any window of one second holds at most five starts: the sixth start after any start
    # comes a full second later (the database's clock stamped them all).
    crowded = [
        (first, sixth)
        for first, sixth in zip(started, started[LIMIT:], strict=False)
        if sixth - first < PER
    ]
    assert not crowded
    assert set(Job.objects.values_list("attempts", flat=True)) == {1}
    # The limit bound (16 threads would take 40 jobs at once), and the waits ended when the
    # window let one more start, not at a later poll.
    span = started[-1] - started[0]
    assert PER * (JOBS // LIMIT - 1) <= span < PER * (JOBS // LIMIT + 2)
    workers = set(Job.objects.values_list("lease_owner", flat=True))
    assert len(workers) > 1
