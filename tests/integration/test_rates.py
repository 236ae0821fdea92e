"""Rate limits: the claim counts starts per rate key in a sliding window on the database's
clock, waits without spending an attempt, says when the next start is possible, and refuses
bad declarations with a coded error."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.test import override_settings

from litejobs import Rate, job
from litejobs.exceptions import DeclarationError, InvalidInput
from litejobs.jobs import catalog, claims
from litejobs.jobs.holdups import HoldUpCode, holdup_of
from litejobs.models import Job, JobState, RateBucket
from litejobs.rates import buckets
from tests.factories import WorkerFactory
from tests.testapp.jobs import partner_call, rated, record

pytestmark = pytest.mark.django_db(transaction=True)

LEASE = timedelta(minutes=1)


def claim(owner="worker-a", limit=10, alias="default"):
    """The plain claim then the limited one, as a worker's runner does; answers the jobs and
    the limited claim's wake-up instant."""
    from litejobs.core import clock

    now = clock.now()
    ask = {"owner": owner, "queues": [], "limit": limit, "now": now, "lease": LEASE}
    with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
        plain = claims.claim(cursor, **ask)
        limited = claims.claim_limited(cursor, **ask)
    return plain.jobs + limited.jobs, limited.wake_at


def test_a_rate_starts_at_most_its_limit_per_window_and_waits_without_an_attempt(clock):
    rated.enqueue_many([{"n": n} for n in range(8)])
    taken, wake_at = claim()
    assert len(taken) == 5
    start = clock.now()
    assert wake_at == start + timedelta(seconds=1)
    waiting = Job.objects.filter(state=JobState.READY)
    assert waiting.count() == 3 and {j.attempts for j in waiting} == {0}

    clock.advance(timedelta(milliseconds=999))
    assert claim()[0] == []
    WorkerFactory()
    held = holdup_of(waiting.first())
    assert held.code == HoldUpCode.RATE_LIMITED
    assert (held.rate_key, held.rate_limit, held.starts_left) == ("testapp.rated", 5, 0)
    assert held.until == start + timedelta(seconds=1)
    assert held.as_json()["code"] == "rate-limited"
    assert {j.attempts for j in waiting} == {0}

    clock.advance(timedelta(milliseconds=1))
    assert len(claim()[0]) == 3
    started = sorted(Job.objects.values_list("started_at", flat=True))
    assert started[5] - started[0] == timedelta(seconds=1)
    [bucket] = buckets()
    assert (bucket.key, bucket.used, bucket.left) == ("testapp.rated", 3, 2)


def test_a_rate_key_makes_one_bucket_per_value_beside_a_concurrency_limit(clock):
    partner_call.enqueue_many([{"account": a, "n": n} for a in ("a", "b") for n in range(4)])
    taken, wake_at = claim()
    assert sorted(j.payload["account"] for j in taken) == ["a", "a", "b", "b"]
    assert wake_at == clock.now() + timedelta(seconds=10)
    assert set(RateBucket.objects.values_list("key", flat=True)) == {"partner:a", "partner:b"}
    clock.advance(timedelta(seconds=10))
    assert len(claim()[0]) == 4


def test_a_rate_far_above_the_drain_rate_changes_nothing(clock):
    @job(name="tests.roomy", key=lambda n: f"roomy:{n}", rate=Rate(limit=100_000, per="1s"))
    def roomy(ctx, n: int) -> None:
        """Never binds."""

    try:
        roomy.enqueue_many([{"n": n} for n in range(30)])
        assert len(claim(limit=30)[0]) == 30
        assert claim()[1] is None  # nothing waits on the rate
    finally:
        catalog.unregister("tests.roomy")


def test_a_queue_rate_is_shared_by_every_job_of_the_queue(clock):
    with override_settings(LITEJOBS={"QUEUE_RATES": {"default": {"limit": 2, "per": "1m"}}}):
        record.enqueue_many([{"label": f"q{n}", "value": n} for n in range(4)])
        assert set(Job.objects.values_list("rate_key", flat=True)) == {"queue:default"}
        assert len(claim()[0]) == 2
        assert claim()[0] == []
        clock.advance(timedelta(minutes=1))
        assert len(claim()[0]) == 2


def test_two_workers_never_both_take_the_last_start():
    """The check and the claim are one statement under the limited claim's lock: a claim that
    waits for another's lock sees its start and takes none."""
    rated.enqueue_many([{"n": n} for n in range(10)])
    with connection.cursor() as cursor:  # the window holds four starts already
        cursor.execute(
            'INSERT INTO litejobs_rate (key, "limit", per, starts, counts, last_start_at) '
            "VALUES ('testapp.rated', 5, interval '1 minute', "
            "ARRAY[now()], ARRAY[4], now())"
        )
    first_claimed = threading.Event()
    release = threading.Event()
    answers = {}

    def first():
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                answers["first"] = claims.claim_limited(cursor, **_ask("first")).jobs
                first_claimed.set()
                release.wait(10)
        finally:
            connection.close()

    def second():
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                # It leaves the first one's job aside (as a worker leaves one it handed
                # back): without the lock it would take another job, and a sixth start.
                taken = [job.id for job in answers["first"]]
                answers["second"] = claims.claim_limited(cursor, **_ask("second"), avoid=taken).jobs
        finally:
            connection.close()

    one = threading.Thread(target=first)
    one.start()
    assert first_claimed.wait(10)
    two = threading.Thread(target=second)
    two.start()
    time.sleep(0.5)  # the second claim runs while the first holds its transaction open
    release.set()
    one.join(10)
    two.join(10)
    assert len(answers["first"]) == 1
    assert answers["second"] == []
    assert Job.objects.filter(state=JobState.RUNNING).count() == 1


def _ask(owner):
    from litejobs.core import clock

    return {"owner": owner, "queues": [], "limit": 10, "now": clock.now(), "lease": LEASE}


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"limit": 0}, "from 1 to 100,000"),
        ({"limit": 100_001}, "from 1 to 100,000"),
        ({"limit": 1.5}, "whole number"),
        ({"limit": True}, "whole number"),
        ({"limit": 1, "per": "soon"}, "duration"),
        ({"limit": 1, "per": 0}, "positive"),
        ({"limit": 1, "per": "0s"}, "positive"),
        ({"limit": 1, "per": "-1s"}, "duration"),
        ({"limit": 1, "key": "account"}, "callable"),
    ],
)
def test_a_bad_rate_is_refused_with_a_code(arguments, words):
    with pytest.raises(DeclarationError, match=words) as refused:
        Rate(**arguments)
    assert refused.value.code == "rate-invalid"


def test_a_rate_that_is_not_a_rate_is_refused_at_declaration():
    with pytest.raises(DeclarationError) as refused:

        @job(name="tests.badrate", key=lambda: "x", rate={"limit": 5})
        def badrate(ctx) -> None:
            """Never declared."""

    assert refused.value.code == "rate-invalid"


@pytest.mark.parametrize("answer", [7, "", None, "x" * 201])
def test_a_rate_key_answering_no_string_refuses_the_enqueue_and_writes_nothing(answer):
    @job(
        name="tests.badkey",
        key=lambda n: f"badkey:{n}",
        rate=Rate(limit=5, per="1s", key=lambda n: answer),
    )
    def badkey(ctx, n: int) -> None:
        """Its rate key is no string."""

    try:
        with pytest.raises(InvalidInput) as refused:
            badkey.enqueue(n=1)
        assert refused.value.code == "rate-key-invalid"
        assert not Job.objects.exists()
    finally:
        catalog.unregister("tests.badkey")


def test_starts_close_together_are_merged_at_the_later_instant_and_stay_longer(clock):
    """A bucket keeps one entry per claim; claims less than per / 500 apart share one entry,
    at the later instant: their starts count a little longer, never shorter."""
    rated.enqueue_many([{"n": n} for n in range(10)])
    first = clock.now()
    assert len(claim(limit=2)[0]) == 2
    clock.advance(timedelta(milliseconds=1))  # within 1 s / 500 = 2 ms
    assert len(claim(limit=2)[0]) == 2
    bucket = RateBucket.objects.get()
    assert (bucket.starts, bucket.counts) == ([first + timedelta(milliseconds=1)], [4])
    clock.advance(timedelta(milliseconds=998))  # the first two started 999 ms ago
    assert len(claim()[0]) == 1
    clock.advance(timedelta(milliseconds=1))  # they started a second ago: counted still
    assert claim()[0] == []
    clock.advance(timedelta(microseconds=999))
    assert claim()[0] == []
    clock.advance(timedelta(microseconds=1))  # a second after their merged entry
    assert len(claim()[0]) == 4
