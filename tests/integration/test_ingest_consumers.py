"""Consumers: each page of a pull source fed once, a batch and its position committed
together, one run per key at a time, and answers that are not (records, position) refused."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, connections, transaction

from litejobs.core.enums import JobState
from litejobs.exceptions import InvalidInput
from litejobs.ingest import ConsumerNotFound, FetchRefused, consumers
from litejobs.ingest.consumers import Position, advance, enqueue_consume, find
from litejobs.models import IngestPosition, Job
from tests.conftest import wait_for
from tests.ingest_helpers import SOURCE_VARIABLE, Source, buffered, landed, skus
from tests.testapp.pipelines import catalog, source_record

pytestmark = pytest.mark.django_db(transaction=True)

CONSUME = "litejobs.ingest_consume"
DRAIN = "litejobs.ingest_drain"


@pytest.fixture
def source(tmp_path, monkeypatch):
    """An empty fake source that ``vendor-a`` reads, in a folder of this test."""
    monkeypatch.setenv(SOURCE_VARIABLE, str(tmp_path / "source"))
    return Source(tmp_path / "source")


@pytest.fixture
def scripted():
    """Declare the consumer ``scripted`` of the test catalog, which answers what the test
    puts in ``answers``, in order (a function: what it answers; forgotten afterwards)."""
    answers: list = []

    def fetch(position):
        answer = answers.pop(0)
        return answer(position) if callable(answer) else answer

    yield catalog.consumer("scripted")(fetch), answers
    consumers.consumers.unregister("tests.catalog:scripted")


def vendor_a():
    return find("tests.catalog", "vendor-a")


def until_idle(run_worker, **options) -> None:
    """Run in-process workers until no job is live (a run a limit held back runs next)."""
    for _ in range(20):
        run_worker(queues=["ingest"], **options)
        if not Job.objects.exclude(state__in=[JobState.DONE, JobState.DEAD]).exists():
            return
    raise AssertionError("jobs still live after 20 worker runs")


def in_thread(function, *args):
    """``function(*args)`` for a thread: its database connections closed when it ends."""

    def run() -> None:
        try:
            function(*args)
        finally:
            connections.close_all()

    return run


def test_a_consumer_feeds_each_page_once_and_stops_once_caught_up(run_worker, source):
    source.size = 35
    catalog.consume("vendor-a")
    until_idle(run_worker)
    assert source.reads() == [(1, 10), (11, 20), (21, 30), (31, 35), (36, 35)]
    assert landed() == dict.fromkeys(skus(1, 35), 1)
    assert catalog.position("vendor-a") == 35

    source.size = 42  # the partner has more: the next run starts past the stored position
    catalog.consume("vendor-a")
    until_idle(run_worker)
    assert source.reads()[5:] == [(36, 42), (43, 42)]
    assert landed() == dict.fromkeys(skus(1, 42), 1)
    stored = IngestPosition.objects.get(pipeline="tests.catalog", key="vendor-a")
    assert (stored.position, stored.batches) == (42, 5)
    [first, second] = Job.objects.filter(name=CONSUME).order_by("id")
    assert (first.result, second.result) == (
        {"batches": 4, "records": 35, "overtaken": 0},
        {"batches": 1, "records": 7, "overtaken": 0},
    )


@pytest.fixture
def failing_position_write():
    """Make the next position move of a consumer fail in the database, after its batch was fed:
    ``"raises"`` (the statement errors) or ``"dies"`` (the connection is terminated)."""

    def install(how: str) -> None:
        act = {
            "raises": "RAISE EXCEPTION 'the position write failed';",
            "dies": "PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5);",
        }[how]
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE FUNCTION test_fail_position() RETURNS trigger LANGUAGE plpgsql AS $$ "
                f"BEGIN {act} RETURN NEW; END $$;"
                "CREATE TRIGGER test_fail_position BEFORE UPDATE ON litejobs_ingestposition "
                "FOR EACH ROW EXECUTE FUNCTION test_fail_position();"
            )

    yield install
    connection.close()  # a terminated connection is reopened
    with connection.cursor() as cursor:
        cursor.execute(
            "DROP TRIGGER IF EXISTS test_fail_position ON litejobs_ingestposition;"
            "DROP FUNCTION IF EXISTS test_fail_position();"
        )


@pytest.mark.parametrize("how", ["raises", "dies"])
def test_a_batch_whose_position_write_fails_is_not_kept_and_is_read_again(
    source, failing_position_write, how
):
    source.size = 30
    advance(vendor_a())
    failing_position_write(how)

    with pytest.raises(Exception):  # noqa: B017 - the database's error, whichever
        advance(vendor_a())
    connection.close()
    assert source.reads() == [(1, 10), (11, 20)]
    # Records 11-20 were fed in the failed transaction: gone with their position.
    assert buffered() == skus(1, 10)
    assert IngestPosition.objects.get(key="vendor-a").batches == 1
    assert catalog.position("vendor-a") == 10

    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER test_fail_position ON litejobs_ingestposition")
    advance(vendor_a())
    assert source.reads()[2:] == [(11, 20)]  # only the batch that was not kept
    assert buffered() == skus(1, 20)
    assert catalog.position("vendor-a") == 20


def test_a_batch_another_run_overtook_is_rolled_back_and_fed_once(source):
    """Two runs of one consumer at once (what the job's limit prevents): both read page 1;
    the one that moves the position second finds it moved and rolls its batch back."""
    source.size = 30
    hold = source.hold(1)
    turns = []

    threads = [
        threading.Thread(target=in_thread(lambda: turns.append(advance(vendor_a()))))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(source.reads()) == 2, timeout=10, what="both runs to fetch page 1")
    hold.unlink()
    for thread in threads:
        thread.join(10)

    assert source.reads() == [(1, 10), (1, 10)]
    assert sorted((t.moved, t.overtaken) for t in turns) == [(False, True), (True, False)]
    assert buffered() == skus(1, 10)  # fed once: the overtaken batch rolled back
    assert consumers.position(vendor_a()) == Position(10, 1)


def test_only_one_run_of_a_consumer_fetches_at_a_time(run_worker, source):
    source.size = 60
    source.delay(0.05)
    for lane in ("a", "b"):  # two runs due at once, on two worker threads
        enqueue_consume(vendor_a(), lane)
    until_idle(run_worker, concurrency=4)
    assert source.overlaps() == []
    reads = source.reads()
    assert reads[:6] == [(n, n + 9) for n in range(1, 60, 10)]
    assert reads[6:] == [(61, 60), (61, 60)]  # each run's last fetch: caught up
    assert landed() == dict.fromkeys(skus(1, 60), 1)
    assert set(Job.objects.filter(name=CONSUME).values_list("state", flat=True)) == {"done"}


def test_consume_while_a_run_fetches_enqueues_the_next_run_behind_it(run_worker, source):
    source.size = 10
    hold = source.hold(11)
    first = catalog.consume("vendor-a")
    worker = threading.Thread(target=in_thread(until_idle, run_worker))
    worker.start()
    try:
        wait_for(lambda: source.held(11), timeout=10, what="the run to fetch past page 1")
        second = catalog.consume("vendor-a")  # the source changed after that fetch began
        again = catalog.consume("vendor-a")
        source.size = 15
    finally:
        hold.unlink()
        worker.join(30)
    assert not first.deduped and not second.deduped and second.id != first.id
    assert again.deduped and again.id == second.id
    assert source.reads() == [(1, 10), (11, 10), (11, 15), (16, 15)]
    assert landed() == dict.fromkeys(skus(1, 15), 1)
    keys = list(Job.objects.filter(name=CONSUME).order_by("id").values_list("key", flat=True))
    assert keys == [
        "ingest-consume:tests.catalog:vendor-a:a",
        "ingest-consume:tests.catalog:vendor-a:b",
    ]


def test_a_run_past_its_budget_hands_over_to_the_other_lane(run_worker, source, monkeypatch):
    monkeypatch.setattr(consumers, "BUDGET", timedelta(0))  # one batch a run
    source.size = 25
    catalog.consume("vendor-a")
    until_idle(run_worker)
    assert landed() == dict.fromkeys(skus(1, 25), 1)
    runs = Job.objects.filter(name=CONSUME).order_by("id")
    assert [run.payload["lane"] for run in runs] == ["a", "b", "a", "b"]
    assert [run.result["records"] for run in runs] == [10, 10, 5, 0]
    assert {run.state for run in runs} == {"done"}


BAD_ANSWERS = [
    ([source_record(1)], "ingest-fetch-answer-invalid"),  # a list of records, no position
    (([source_record(1)], 1, True), "ingest-fetch-answer-invalid"),
    ((source_record(1), 1), "ingest-fetch-answer-invalid"),  # one record, not a list
    (("S0001", 1), "ingest-fetch-answer-invalid"),
    (None, "ingest-fetch-answer-invalid"),
    (([source_record(1)], datetime(2026, 3, 1, tzinfo=UTC)), "ingest-position-not-json"),
    (([source_record(1)], (1, "a")), "ingest-position-not-json"),  # would come back a list
    (([source_record(1)], {1: "a"}), "ingest-position-not-json"),  # its key would be text
    (([source_record(1)], float("nan")), "ingest-position-not-json"),
    (([source_record(1)], {1, 2}), "ingest-position-not-json"),
    (([source_record(1)], None), "ingest-position-stuck"),  # read from None, answered None
]


@pytest.mark.parametrize(("answer", "code"), BAD_ANSWERS)
def test_an_answer_that_is_not_records_and_a_json_position_is_refused_with_nothing_written(
    scripted, answer, code
):
    consumer, answers = scripted
    answers.append(answer)
    with pytest.raises(FetchRefused) as refused:
        advance(consumer)
    assert refused.value.code == code
    assert "Nothing of this batch was written" in str(refused.value)
    assert buffered() == []
    assert not IngestPosition.objects.exists()
    assert not Job.objects.filter(name=DRAIN).exists()


def test_a_record_the_pipeline_refuses_leaves_the_whole_batch_unwritten(scripted):
    consumer, answers = scripted
    answers.append(([source_record(1), {"name": "no sku"}], 2))
    with pytest.raises(InvalidInput) as refused:
        advance(consumer)
    assert refused.value.code == "ingest-record-invalid"
    assert buffered() == []
    assert not IngestPosition.objects.exists()


def test_a_position_stuck_after_it_moved_is_refused(scripted):
    consumer, answers = scripted
    answers.extend([([source_record(1)], {"page": 2}), ([source_record(2)], {"page": 2})])
    advance(consumer)
    with pytest.raises(FetchRefused) as refused:
        advance(consumer)
    assert refused.value.code == "ingest-position-stuck"
    assert buffered() == ["S0001"]
    assert catalog.position("scripted") == {"page": 2}


def test_consume_of_an_undeclared_consumer_is_refused_before_anything_is_enqueued():
    with pytest.raises(ConsumerNotFound) as refused:
        catalog.consume("vendor-z")
    assert refused.value.code == "ingest-consumer-unknown"
    assert "@….consumer('vendor-z') of the pipeline('tests.catalog', …)" in str(refused.value)
    assert not Job.objects.exists()
    with pytest.raises(ConsumerNotFound):
        catalog.position("vendor-z")


def test_a_consumer_enqueued_in_a_transaction_that_rolls_back_never_runs(source):
    with pytest.raises(RuntimeError), transaction.atomic():
        catalog.consume("vendor-a")
        raise RuntimeError("rolled back")
    assert not Job.objects.exists()


def test_the_fetch_runs_outside_any_transaction(scripted):
    """A partner's latency holds no transaction, lock or row open."""
    consumer, answers = scripted
    seen = []

    def fetch(position):
        seen.append(connection.in_atomic_block)
        return [source_record(1)], 1

    answers.append(fetch)
    advance(consumer)
    assert seen == [False]
    assert catalog.position("scripted") == 1
