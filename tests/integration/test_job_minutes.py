"""The per-minute job counters: written by the statements that settle jobs, exactly what
happened, without lost updates or waits between concurrent settlers, purged after two days."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Sum

from litejobs.jobs import claims, leases, minutes, operations, transitions
from litejobs.models import BUCKET_BOUNDS, Job, JobMinute, MinuteOutcome
from litejobs.runtime.listening import connect
from tests.factories import heartbeat_row
from tests.testapp.jobs import flaky, gives_up, noop, record

pytestmark = pytest.mark.django_db(transaction=True)


def _counted() -> dict[str, int]:
    rows = JobMinute.objects.values("outcome").annotate(n=Sum("count"))
    return {row["outcome"]: row["n"] for row in rows}


def _claim(now, limit=10, owner="test"):
    with connection.cursor() as cursor:
        return claims.claim(
            cursor, owner=owner, queues=[], limit=limit, now=now, lease=timedelta(minutes=1)
        ).jobs


def test_counters_equal_what_the_worker_settled(clock, run_worker):
    record.enqueue(label="a")
    record.enqueue(label="b")
    flaky.enqueue(label="once", failures=1)  # fails once: a retry is pending
    gives_up.enqueue(label="never")  # a permanent error: dead at once
    cancelled = noop.enqueue(n=1, run_at=clock.now() + timedelta(hours=1))
    operations.cancel(cancelled.id, by="test")
    run_worker()
    assert _counted() == {
        MinuteOutcome.DONE: 2,
        MinuteOutcome.FAILED: 1,
        MinuteOutcome.DEAD: 1,
        MinuteOutcome.CANCELLED: 1,
    }
    done = JobMinute.objects.filter(outcome=MinuteOutcome.DONE)  # a row per runner's session
    assert {(r.name, r.queue, r.minute) for r in done} == {(record.name, "default", clock.now())}
    assert sum(r.timed for r in done) == 2
    assert sum(sum(r.latency_buckets) + sum(r.duration_buckets) for r in done) == 4
    never_started = JobMinute.objects.get(outcome=MinuteOutcome.CANCELLED)
    assert never_started.timed == 0 and sum(never_started.latency_buckets) == 0


def test_a_lapsed_lease_swept_by_a_heartbeat_is_counted_with_its_wait(clock):
    record.enqueue(label="lost")
    clock.advance("30s")  # it waited 30 s for a worker
    _claim(clock.now())
    clock.advance("2m")
    with connection.cursor() as cursor:
        leases.heartbeat(
            cursor, worker=heartbeat_row(clock.now(), owner="other"), held=[], reap=True
        )
    row = JobMinute.objects.get()
    assert (row.outcome, row.count, row.timed) == (MinuteOutcome.LAPSED, 1, 1)
    assert row.latency_sum == pytest.approx(30)
    assert row.duration_sum == pytest.approx(120)
    # 30 s falls in the bucket from 30 s up to 60 s; 120 s in the one from 60 s to 300 s.
    assert row.latency_buckets[BUCKET_BOUNDS.index(30) + 1] == 1
    assert row.duration_buckets[BUCKET_BOUNDS.index(60) + 1] == 1


def test_a_batched_acknowledgement_counts_each_job_once(clock):
    for n in range(5):
        noop.enqueue(n=n)
    held = _claim(clock.now())
    clock.advance("2s")
    with connection.cursor() as cursor:
        done = transitions.complete_batch(cursor, [(job, clock.now(), None) for job in held])
    assert len(done) == 5
    row = JobMinute.objects.get()
    assert (row.outcome, row.count, row.timed) == (MinuteOutcome.DONE, 5, 5)
    assert row.duration_sum == pytest.approx(10)


def test_concurrent_settlers_neither_lose_counts_nor_wait_on_each_others_counter(clock):
    """An atomic job's completion runs in its body's transaction: while one is still open,
    another worker's completion of a job of the same name, in the same minute, goes through
    at once (each session counts on rows of its own), and no count is lost."""
    for n in range(41):
        noop.enqueue(n=n)
    held = _claim(clock.now(), limit=41)
    first, rest = held[0], held[1:]
    with connect("default") as open_body, connect("default") as other:
        open_body.execute("BEGIN")
        with open_body.cursor() as cursor:
            assert transitions.complete(cursor, first, now=clock.now(), result_json=None)
        other.execute("SET lock_timeout = '2s'")

        def settle(jobs):
            with connect("default") as own, own.cursor() as cursor:
                own.execute("SET lock_timeout = '2s'")
                for job in jobs:
                    assert transitions.complete(cursor, job, now=clock.now(), result_json=None)

        threads = [threading.Thread(target=settle, args=(rest[i::2],)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert JobMinute.objects.aggregate(n=Sum("count"))["n"] == 40  # no wait, no loss
        open_body.execute("COMMIT")
    assert _counted() == {MinuteOutcome.DONE: 41}
    assert Job.objects.filter(state="done").count() == 41


def test_quantiles_are_estimated_within_their_bucket():
    buckets = [0] * (len(BUCKET_BOUNDS) + 1)
    buckets[BUCKET_BOUNDS.index(1) + 1] = 10  # ten values between 1 s and 2.5 s
    assert minutes.quantile(0.5, buckets) == pytest.approx(1.75)
    assert minutes.quantile(0.5, [0] * len(buckets)) is None
    buckets[-1] = 100  # past the last bound: the last bound
    assert minutes.quantile(0.95, buckets) == BUCKET_BOUNDS[-1]


def _buckets_of(name: str) -> list[int]:
    rows = JobMinute.objects.filter(name=name)
    return [sum(column) for column in zip(*(row.duration_buckets for row in rows), strict=True)]


@pytest.mark.parametrize("batched", [False, True], ids=["one job", "batched"])
def test_each_bound_opens_its_own_bucket(clock, batched):
    """Durations of 0 and of exactly each bound land one in each bucket, whether counted by
    an atomic job's one-job completion or by a batched acknowledgement."""
    edges = [0.0, *BUCKET_BOUNDS]
    for n in range(len(edges)):
        noop.enqueue(n=n)
    started = clock.now()
    held = sorted(_claim(started, limit=len(edges)), key=lambda job: job.id)
    settled = [
        (job, started + timedelta(seconds=edge), None)
        for job, edge in zip(held, edges, strict=True)
    ]
    with connection.cursor() as cursor:
        if batched:
            assert len(transitions.complete_batch(cursor, settled)) == len(edges)
        else:
            for job, at, result in settled:
                assert transitions.complete(cursor, job, now=at, result_json=result)
    assert _buckets_of(noop.name) == [1] * (len(BUCKET_BOUNDS) + 1)
    assert JobMinute.objects.aggregate(n=Sum("count"), timed=Sum("timed")) == {
        "n": len(edges),
        "timed": len(edges),
    }
    assert JobMinute.objects.aggregate(s=Sum("duration_sum"))["s"] == pytest.approx(sum(edges))


def test_purge_folds_counters_older_than_two_days_into_carried_totals(clock, run_worker):
    record.enqueue(label="old")
    run_worker()
    clock.advance(minutes.KEPT - timedelta(minutes=1))
    operations.purge()
    assert JobMinute.objects.count() == 1
    before = minutes.started_totals()
    record.enqueue(label="new")
    run_worker()
    clock.advance("2m")
    operations.purge()
    # The old minute is gone from the charts' rows; its counts live on in the carried row.
    [carried, kept] = JobMinute.objects.order_by("minute")
    assert (carried.minute.year, carried.shard, carried.count) == (1970, 0, 1)
    assert kept.minute == clock.now() - timedelta(minutes=2)
    [total] = minutes.started_totals()
    assert (total.count, sum(total.buckets)) == (2, 2)
    assert before[0].count == 1
    # A second purge adds to the carried row rather than making another.
    clock.advance(minutes.KEPT)
    operations.purge()
    [carried] = JobMinute.objects.all()
    assert (carried.count, sum(carried.duration_buckets)) == (2, 2)
    assert minutes.started_totals()[0].count == 2
