"""Ingest pipelines: feeding, the drain's processing, drops, poison, overflow, replay."""

from __future__ import annotations

import json
import logging
import threading
import time

import pytest
from django.db import connection, transaction

from litejobs import Buffer, Freshness, drop, enrich
from litejobs.exceptions import InvalidInput
from litejobs.ingest import BufferFull
from litejobs.models import BufferedRecord, Job, OverflowEvent, SetAsideRecord
from tests.conftest import wait_for
from tests.testapp import pipelines
from tests.testapp.models import Product
from tests.testapp.pipelines import Reason, record

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _forget_calls():
    pipelines.calls.clear()
    pipelines.attempts.clear()


def skus():
    return sorted(Product.objects.values_list("sku", flat=True))


def test_fed_records_land_through_the_steps_in_order(run_worker):
    pipelines.catalog.feed([record("A"), record("B", status="discontinued"), record("C", "0.5")])
    run_worker(queues=["ingest"])
    assert skus() == ["A"]
    assert pipelines.catalog.stats() == {
        "accepted": 1,
        "dropped": {"discontinued": 1, "below_threshold": 1},
        "errored": 0,
    }
    assert not BufferedRecord.objects.exists()
    assert [c for c in pipelines.calls if c[1] == "A"] == [
        ("parse", "A"),
        ("price_in_eur", "A"),
        ("below_threshold", "A"),
        ("sink", "A"),
        ("written", "A"),
    ]
    # A dropped record stops at the step that dropped it.
    assert [c[0] for c in pipelines.calls if c[1] == "B"] == ["parse"]
    aside = {r.key: (r.outcome, r.reason, r.step) for r in SetAsideRecord.objects.all()}
    assert aside == {
        "B": ("dropped", "discontinued", "parse"),
        "C": ("dropped", "below_threshold", "below_threshold"),
    }


def test_stats_read_by_member_or_value_and_count_zero_for_an_unused_reason(run_worker):
    pipelines.catalog.feed([record("A", status="discontinued")])
    run_worker(queues=["ingest"])
    dropped = pipelines.catalog.stats()["dropped"]
    assert dropped[Reason.DISCONTINUED] == dropped["discontinued"] == 1
    assert dropped[Reason.POISON] == 0
    assert dropped == {Reason.DISCONTINUED: 1}


def test_a_reason_outside_the_drop_steps_set_is_an_error_never_a_drop(run_worker):
    pipelines.catalog.feed([record("A", status="bogus"), record("B")])
    run_worker(queues=["ingest"])
    stats = pipelines.catalog.stats()
    assert stats["errored"] == 1 and stats["dropped"] == {} and stats["accepted"] == 1
    errored = SetAsideRecord.objects.get(key="A")
    assert (errored.outcome, errored.reason, errored.step) == ("errored", "", "parse")
    assert "ingest-reason-outside-set" in errored.error


def test_a_drop_step_answering_another_member_of_the_set_is_an_error(declare_pipeline, run_worker):
    @drop(reasons={Reason.DISCONTINUED})
    def wrong_member(record):
        return Reason.BELOW_THRESHOLD  # in the pipeline's set, not in this step's

    wrong = declare_pipeline("tests.wrong_member", steps=[wrong_member])
    wrong.feed([record("A")])
    run_worker(queues=["ingest"])
    assert wrong.stats() == {"accepted": 0, "dropped": {}, "errored": 1}


def test_a_record_whose_step_keeps_raising_is_poison_after_exactly_three_attempts(run_worker):
    pipelines.catalog.feed([record("A"), record("B", fail="price_in_eur:always"), record("C")])
    run_worker(queues=["ingest"])
    assert [c for c in pipelines.calls if c == ("price_in_eur", "B")] == [("price_in_eur", "B")] * 3
    poisoned = SetAsideRecord.objects.get(key="B")
    assert (poisoned.outcome, poisoned.reason, poisoned.attempts) == ("dropped", "poison", 3)
    assert poisoned.error == "RuntimeError raised 3 times"  # never the message: it may quote values
    assert skus() == ["A", "C"]


def test_poison_after_is_configurable_and_a_later_attempt_may_succeed(declare_pipeline, run_worker):
    patient = declare_pipeline("tests.patient", poison_after=5)
    patient.feed([record("A", fail="parse:until4"), record("B", fail="parse:always")])
    run_worker(queues=["ingest"])
    assert pipelines.attempts[("parse", "A")] == 4
    assert pipelines.attempts[("parse", "B")] == 5
    assert skus() == ["A"]
    assert patient.stats()["dropped"] == {"poison": 1}


def test_one_bad_record_does_not_roll_back_the_others_nor_keep_its_own_writes(run_worker):
    batch = [record(sku) for sku in "ABCDE"]
    batch[2]["fail"] = "written:always"  # C's sink writes, then raises
    pipelines.catalog.feed(batch)
    run_worker(queues=["ingest"])
    assert skus() == ["A", "B", "D", "E"]
    assert set(Product.objects.values_list("writes", flat=True)) == {1}
    assert pipelines.catalog.stats()["dropped"] == {"poison": 1}


def test_an_enrich_step_reading_an_undeclared_source_is_a_coded_error(run_worker):
    pipelines.catalog.feed([record("A", peek=True)])
    run_worker(queues=["ingest"])
    errored = SetAsideRecord.objects.get(key="A")
    assert errored.outcome == "errored"
    assert "[ingest-source-undeclared]" in errored.error and "'stock'" in errored.error
    assert pipelines.attempts[("price_in_eur", "A")] == 1  # not retried: it would only repeat


def test_a_feed_is_part_of_the_callers_transaction():
    with pytest.raises(RuntimeError), transaction.atomic():
        pipelines.catalog.feed([record("A")])
        raise RuntimeError("the caller rolls back")
    assert not BufferedRecord.objects.exists()
    assert not Job.objects.filter(name="litejobs.ingest_drain").exists()


def test_a_refused_record_refuses_the_whole_feed():
    with pytest.raises(InvalidInput) as refused:
        pipelines.catalog.feed([record("A"), {"name": "no sku"}])
    assert refused.value.code == "ingest-record-invalid"
    assert "record 1" in str(refused.value) and "KeyError" in str(refused.value)
    with pytest.raises(InvalidInput, match="not JSON"):
        pipelines.catalog.feed([record("A", when=object())])
    with pytest.raises(InvalidInput, match="one record"):
        pipelines.catalog.feed(record("A"))
    assert not BufferedRecord.objects.exists()


@pytest.mark.parametrize(
    ("records", "why"),
    [
        (None, "feed() takes a list of records (dicts); got None"),
        (7, "feed() takes a list of records (dicts); got a value of type int"),
        ([record("A", name="Na\0me")], "record 0 was refused: its field 'name' holds a NUL"),
        ([record("A", tags=["ok", "\0"])], "its field 'tags' holds a NUL character"),
        ([record("A", name="\ud800")], "its field 'name' holds a lone surrogate"),
        (
            [record("A"), {**record("B"), 5: "x"}],
            "record 1 was refused: its field '5' holds a field",
        ),
        ([record("A", nested={5: "x"})], "its field 'nested' holds a field name that is no text"),
        ([record("\0")], "its key holds a NUL character"),
        ([record("x" * 501)], "its key is longer than 500 characters"),
        (
            [record("A", note="x" * 5_000_000)],
            "bytes of JSON, over the pipeline's max_record_bytes",
        ),
    ],
)
def test_a_feed_postgresql_could_not_keep_is_refused_with_a_code(records, why):
    """Never a DataError, nor a record silently changed ({5: "x"} read back as {"5": "x"})."""
    with pytest.raises(InvalidInput) as refused:
        pipelines.catalog.feed(records)
    assert refused.value.code == "ingest-record-invalid"
    assert why in str(refused.value)
    assert "Na\0me" not in str(refused.value) and "xxxx" not in str(refused.value)
    assert not BufferedRecord.objects.exists()


def test_a_record_of_the_size_limit_is_fed(declare_pipeline, run_worker):
    small = declare_pipeline("tests.small_records", max_record_bytes=200)
    fits = record("A", note="")
    fits["note"] = "x" * (200 - len(json.dumps(fits, separators=(",", ":"))))
    assert small.feed([fits]) == 1
    with pytest.raises(InvalidInput, match="it is 201 bytes of JSON"):
        small.feed([{**fits, "note": fits["note"] + "x"}])


def test_block_waits_for_room_then_refuses_and_writes_nothing(declare_pipeline, caplog):
    small = declare_pipeline(
        "tests.block", buffer=Buffer(capacity=3, overflow="block", wait="0.3s")
    )
    small.feed([record("A"), record("B")])
    started = time.monotonic()
    with pytest.raises(BufferFull) as full, caplog.at_level(logging.ERROR, "litejobs"):
        small.feed([record("C"), record("D")])
    assert time.monotonic() - started >= 0.3
    assert full.value.code == "ingest-buffer-full"
    assert BufferedRecord.objects.filter(pipeline="tests.block").count() == 2
    assert "buffer full" in caplog.text
    with pytest.raises(BufferFull, match="more records than the buffer holds"):
        small.feed([record(str(n)) for n in range(4)])


def test_block_feeds_once_the_drain_makes_room(declare_pipeline):
    small = declare_pipeline(
        "tests.block_room", buffer=Buffer(capacity=2, overflow="block", wait="10s")
    )
    small.feed([record("A"), record("B")])

    def drain_soon():
        time.sleep(0.3)
        BufferedRecord.objects.filter(key="A").delete()
        connection.close()

    helper = threading.Thread(target=drain_soon)
    helper.start()
    assert small.feed([record("C")]) == 1
    helper.join()
    assert BufferedRecord.objects.filter(pipeline="tests.block_room").count() == 2


def test_drop_oldest_drops_the_oldest_with_the_declared_reason_and_counts_them(declare_pipeline):
    keep = Buffer(capacity=3, overflow="drop_oldest", reason=Reason.OVERFLOW)
    lossy = declare_pipeline("tests.drop_oldest", buffer=keep)
    lossy.feed([record("A"), record("B")])
    lossy.feed([record("C"), record("D"), record("E")])
    buffered = BufferedRecord.objects.filter(pipeline="tests.drop_oldest")
    assert sorted(buffered.values_list("key", flat=True)) == ["C", "D", "E"]
    aside = SetAsideRecord.objects.filter(pipeline="tests.drop_oldest")
    assert sorted((r.key, r.reason) for r in aside) == [("A", "overflow"), ("B", "overflow")]
    assert lossy.stats()["dropped"] == {"overflow": 2}
    event = OverflowEvent.objects.get(pipeline="tests.drop_oldest")
    assert (event.overflow, event.buffered, event.fed, event.dropped) == ("drop_oldest", 2, 3, 2)


def test_page_keeps_every_record_and_pages_an_operator(declare_pipeline, caplog):
    paging = declare_pipeline("tests.page", buffer=Buffer(capacity=2, overflow="page"))
    with caplog.at_level(logging.ERROR, "litejobs"):
        paging.feed([record("A"), record("B"), record("C")])
    assert BufferedRecord.objects.filter(pipeline="tests.page").count() == 3
    assert "Paging an operator" in caplog.text
    assert OverflowEvent.objects.get(pipeline="tests.page").overflow == "page"


def test_replay_feeds_one_reasons_records_back_once(run_worker):
    pipelines.catalog.feed([record("A", "0.5"), record("B", status="discontinued")])
    run_worker(queues=["ingest"])
    pipelines.RATES["EUR"] *= 10  # the fix: prices were in the wrong unit
    try:
        assert pipelines.catalog.replay("below_threshold") == 1
        assert pipelines.catalog.replay(Reason.BELOW_THRESHOLD) == 0  # already replayed
        run_worker(queues=["ingest"])
    finally:
        pipelines.RATES["EUR"] /= 10
    assert skus() == ["A"]
    assert pipelines.catalog.stats()["accepted"] == 1
    with pytest.raises(InvalidInput) as unknown:
        pipelines.catalog.replay("typo")
    assert unknown.value.code == "ingest-reason-unknown"


def test_a_drain_does_not_finish_while_a_feed_it_cannot_see_yet_is_open(run_worker):
    """A feed that found the drain queued (not yet running) relies on it: the drain, claimed
    meanwhile, must not finish before that feed commits."""
    pipelines.catalog.feed([record("A")])  # the drain is queued
    fed, release = threading.Event(), threading.Event()

    def slow_feed():
        with transaction.atomic():
            pipelines.catalog.feed([record("B")])  # deduplicated onto the queued drain
            fed.set()
            release.wait(10)
        connection.close()

    feeder = threading.Thread(target=slow_feed)
    feeder.start()
    fed.wait(10)
    threading.Timer(0.5, release.set).start()
    run_worker(queues=["ingest"])
    feeder.join()
    assert skus() == ["A", "B"]
    assert not BufferedRecord.objects.exists()


def test_a_feed_while_the_drain_runs_wakes_the_next_lane(run_worker):
    pipelines.catalog.feed([record("A", sleep="0.5")])
    worker = threading.Thread(target=run_worker, kwargs={"queues": ["ingest"]})
    worker.start()
    wait_for(lambda: Job.objects.filter(state="running").exists(), what="the drain to run")
    pipelines.catalog.feed([record("B")])
    keys = set(Job.objects.filter(name="litejobs.ingest_drain").values_list("key", flat=True))
    assert keys == {"ingest:tests.catalog:a", "ingest:tests.catalog:b"}
    worker.join()
    run_worker(queues=["ingest"])
    assert skus() == ["A", "B"]


def test_freshness_and_buffer_are_shown_as_declared():
    assert str(pipelines.catalog.freshness) == "bounded: at most 15m old"
    assert str(Freshness.advisory(authority="vendor")) == "advisory: vendor is the authority"
    assert pipelines.catalog.buffer.capacity == 1000


def test_enrich_sources_hold_only_the_declared_names(declare_pipeline, run_worker):
    seen = []

    @enrich(sources={"rates"})
    def look(record, sources):
        seen.append(sorted(sources))
        return record

    looking = declare_pipeline(
        "tests.look", steps=[look], sources={"rates": {}, "stock": {}}, sink=lambda r: None
    )
    looking.feed([record("A")])
    run_worker(queues=["ingest"])
    assert seen == [["rates"]]


def test_housekeeping_purges_what_ingest_keeps_past_its_retention(clock, run_worker):
    from litejobs.ingest import retention

    pipelines.catalog.feed([record("A", status="discontinued"), record("B", "0.1")])
    run_worker(queues=["ingest"])
    clock.advance("29d")
    pipelines.catalog.feed([record("C", status="discontinued")])
    run_worker(queues=["ingest"])
    clock.advance("2d")
    assert retention.purge() == {"set_aside": 2, "imports": 0, "overflow_events": 0}
    assert list(SetAsideRecord.objects.values_list("key", flat=True)) == ["C"]
    # The counts stay: stats() still tells what happened.
    assert pipelines.catalog.stats()["dropped"] == {"discontinued": 2, "below_threshold": 1}


def test_doctor_reports_a_backlog_and_a_buffer_over_capacity(clock, declare_pipeline):
    from datetime import timedelta

    from litejobs.doctor import diagnose

    paging = declare_pipeline("tests.paged", buffer=Buffer(capacity=1, overflow="page"))
    paging.feed([record("A"), record("B")])

    def ingest_problems():
        found = diagnose(max_ready_age=timedelta(minutes=5)).problems
        return {p.code: p for p in found if p.code.startswith("ingest-")}

    assert set(ingest_problems()) == {"ingest-over-capacity"}
    clock.advance("6m")
    problems = ingest_problems()
    assert set(problems) == {"ingest-backlog", "ingest-over-capacity"}
    assert (
        problems["ingest-backlog"].count == 2
        and "tests.paged" in problems["ingest-backlog"].message
    )
