"""The per-minute job counters: written by the statements that settle jobs, exactly what
happened, without lost updates or waits between concurrent settlers, folded per hour past the
dashboard's last hour without changing a chart or a total, purged after two days."""

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, connections, transaction
from django.db.models import Sum

from litejobs.admin.dashboard import WINDOWS
from litejobs.jobs import claims, leases, minutes, operations, retention, transitions
from litejobs.models import BUCKET_BOUNDS, Job, JobMinute, MinuteOutcome
from litejobs.runtime.listening import connect
from litejobs.scheduling.declarations import get as declared_schedule
from litejobs.scheduling.housekeeping import minutes_rollup
from tests.factories import counter_rows, heartbeat_row
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
    retention.purge()
    assert JobMinute.objects.count() == 1
    before = minutes.started_totals()
    record.enqueue(label="new")
    run_worker()
    clock.advance("2m")
    retention.purge()
    # The old minute is gone from the charts' rows; its counts live on in the carried row.
    [carried, kept] = JobMinute.objects.order_by("minute")
    assert (carried.minute.year, carried.shard, carried.count) == (1970, 0, 1)
    assert kept.minute == clock.now() - timedelta(minutes=2)
    [total] = minutes.started_totals()
    assert (total.count, sum(total.buckets)) == (2, 2)
    assert before[0].count == 1
    # A second purge adds to the carried row rather than making another.
    clock.advance(minutes.KEPT)
    retention.purge()
    [carried] = JobMinute.objects.all()
    assert (carried.count, sum(carried.duration_buckets)) == (2, 2)
    assert minutes.started_totals()[0].count == 2


def test_carried_bucket_counts_pass_the_32_bit_range(clock):
    """A busy job name's carried totals pass 2**31 in one bucket within weeks (about 25 days
    at 1,000 jobs a second): a purge keeps adding to them, and the metrics read them whole."""
    big = 2**31 - 1
    buckets = [big] + [0] * len(BUCKET_BOUNDS)
    JobMinute.objects.create(
        minute=datetime(1970, 1, 1, tzinfo=UTC),
        queue="default",
        name=noop.name,
        outcome=MinuteOutcome.DONE,
        shard=0,
        count=big,
        timed=big,
        duration_buckets=buckets,
        latency_buckets=buckets,
    )
    noop.enqueue(n=1)
    [job] = _claim(clock.now())
    with connection.cursor() as cursor:
        assert transitions.complete(cursor, job, now=clock.now(), result_json=None)
    clock.advance(minutes.KEPT + timedelta(minutes=1))
    minutes.purge_minutes(clock.now())
    [carried] = JobMinute.objects.all()
    assert carried.duration_buckets[0] == big + 1
    [total] = minutes.started_totals()
    assert (total.count, total.buckets[0]) == (big + 1, big + 1)


# The hourly rollup ---------------------------------------------------------------------------


def _charts(now):
    """The dashboard's two charts at ``now``: the last hour per minute, the last day per hour."""
    return [
        minutes.periods(start=start, end=end, step=window.step)
        for window in WINDOWS
        for start, end in [window.span(now)]
    ]


def _latencies(periods):
    return [(p.latency_quantile(0.5), p.latency_quantile(0.95)) for p in periods]


def test_a_fold_leaves_both_charts_as_they_were(clock):
    now = clock.now()
    written = counter_rows(now)
    hour, day = _charts(now)
    assert sum(p.counts.get(MinuteOutcome.DONE, 0) for p in day) > 0
    assert minutes.fold_minutes(now) > written / 2
    assert _charts(now) == [hour, day]
    assert _latencies(_charts(now)[1]) == _latencies(day)
    # A fold by a clock up to the margin ahead of the dashboard's changes nothing either.
    minutes.fold_minutes(now + minutes.UNFOLDED - timedelta(hours=1, seconds=1))
    assert _charts(now) == [hour, day]
    # The day chart now reads one row per hour, queue, name and outcome past the last hour,
    # and the last hour's chart reads no folded row.
    [(hour_start, _)] = [window.span(now) for window in WINDOWS[:1]]
    assert not JobMinute.objects.filter(minute__gte=hour_start, shard=0).exists()
    old = JobMinute.objects.filter(minute__lt=hour_start - timedelta(minutes=15))
    assert {(row.shard, row.minute.minute) for row in old} == {(0, 0)}


def test_a_fold_and_a_purge_leave_the_metrics_totals_exactly_as_they_were(clock):
    now = clock.now()
    counter_rows(now, hours=50)
    totals = minutes.started_totals()
    assert sum(total.count for total in totals) > 0
    minutes.fold_minutes(now)
    assert minutes.started_totals() == totals
    minutes.purge_minutes(now)  # the hours past two days go to the carried rows
    assert JobMinute.objects.filter(minute__year=1970).exists()
    minutes.fold_minutes(now + timedelta(hours=3))
    assert minutes.started_totals() == totals


def _waiting_on_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return bool(row) and row[0] == "Lock"


def test_two_folds_at_once_neither_lose_nor_double_a_count(clock):
    """The first fold holds the rows it deleted until it commits; the second, started then,
    sees those rows too and the rows a late writer added meanwhile: it waits for the first,
    skips what the first deleted, and adds the late rows to the hour rows the first made."""
    now = clock.now()
    counter_rows(now, hours=3)
    eligible = JobMinute.objects.filter(minute__lt=now - minutes.UNFOLDED).count()
    first_folded, release = threading.Event(), threading.Event()
    folded: dict[str, int] = {}
    second_pid: list[int] = []

    def first() -> None:
        with transaction.atomic():
            folded["first"] = minutes.fold_minutes(now)
            first_folded.set()
            release.wait(30)
        connections.close_all()

    def second() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            second_pid.append(cursor.fetchone()[0])
        folded["second"] = minutes.fold_minutes(now)
        connections.close_all()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert first_folded.wait(30)
    late = counter_rows(now - timedelta(hours=2), hours=2, sessions=1, seed=8, shards_from=2000)
    day, totals = _charts(now)[1], minutes.started_totals()  # the first's deletes not yet seen
    threads[1].start()
    for _ in range(500):
        if second_pid and _waiting_on_a_lock(second_pid[0]):
            break
        time.sleep(0.01)
    else:
        pytest.fail("the second fold did not wait for the first")
    release.set()
    for thread in threads:
        thread.join(30)
    assert folded == {"first": eligible, "second": late}
    assert _charts(now)[1] == day
    assert minutes.started_totals() == totals


def test_a_job_settled_in_a_folded_minute_after_the_fold_is_counted(clock, run_worker):
    """A worker whose clock lags settles a job in a minute already folded: its session's row
    is charted beside the hour row, and the next fold adds it to that row."""
    settled_at = clock.advance("34m")
    record.enqueue(label="first")
    run_worker()
    clock.advance("3h")
    assert minutes.fold_minutes(clock.now()) == 1
    clock.set(settled_at)
    record.enqueue(label="late")
    run_worker()
    clock.advance("3h")
    day = _charts(clock.now())[1]
    assert sum(p.counts.get(MinuteOutcome.DONE, 0) for p in day) == 2
    assert minutes.fold_minutes(clock.now()) == 1
    assert _charts(clock.now())[1] == day
    [row] = JobMinute.objects.all()
    assert (row.minute, row.shard, row.count, sum(row.latency_buckets)) == (
        settled_at.replace(minute=0),
        0,
        2,
        2,
    )


def test_the_built_in_rollup_schedule_folds_every_ten_minutes(clock, run_worker):
    declared = declared_schedule("litejobs.minutes_rollup")
    assert declared is not None and declared.timetable.every == timedelta(minutes=10)
    assert declared.job is minutes_rollup
    counter_rows(clock.now(), hours=3)
    minutes_rollup.enqueue()
    assert run_worker() == {"done": 1}
    done = Job.objects.get(name=minutes_rollup.name)
    assert done.result["folded"] > 0
    assert not JobMinute.objects.filter(minute__lt=clock.now() - minutes.UNFOLDED).exclude(shard=0)
