"""Declaring consumers: a key that can name a job and a position, a fetch that is a
function, one declaration per key; and the consume job's keys stay within their bounds."""

from __future__ import annotations

import pytest

from litejobs.exceptions import DeclarationError
from litejobs.ingest import Consumer, ConsumerNotFound
from litejobs.ingest.consumers import LABEL_MAX, consumers, find, label
from litejobs.ingest.declarations import CONSUME_JOB
from litejobs.jobs import catalog
from tests.testapp.pipelines import catalog as products
from tests.testapp.pipelines import fetch_vendor_a


@pytest.fixture
def forget():
    """Consumers of the test catalog declared by one test, forgotten afterwards."""
    keys: list[str] = []
    yield keys.append
    for key in keys:
        consumers.unregister(f"tests.catalog:{key}")


def test_a_declared_consumer_is_found_by_pipeline_and_key_and_still_calls_its_fetch():
    assert find("tests.catalog", "vendor-a") is fetch_vendor_a
    assert isinstance(fetch_vendor_a, Consumer)
    assert (fetch_vendor_a.pipeline, fetch_vendor_a.key) == ("tests.catalog", "vendor-a")
    assert repr(fetch_vendor_a) == "<Consumer tests.catalog:vendor-a>"


@pytest.mark.parametrize("key", ["", "vendor a", "vendor:a", "x" * 101, 7, None, "vendör"])
def test_a_key_that_cannot_name_a_job_and_a_position_is_refused(key):
    with pytest.raises(DeclarationError) as refused:
        products.consumer(key)
    assert refused.value.code == "pipeline-consumer-invalid"
    assert "such as 'vendor-a'" in str(refused.value)


def test_a_consumer_marks_a_function():
    with pytest.raises(DeclarationError) as refused:
        products.consumer("vendor-b")("not a function")
    assert refused.value.code == "pipeline-consumer-invalid"
    assert not consumers.get("tests.catalog:vendor-b")


def test_a_key_declared_twice_is_refused_naming_both_modules(forget):
    forget("twice")
    products.consumer("twice")(lambda position: ([], position))
    elsewhere = type(lambda: None)(
        (lambda position: ([], position)).__code__, {"__name__": "shop.pipelines"}
    )
    with pytest.raises(DeclarationError) as refused:
        products.consumer("twice")(elsewhere)
    assert refused.value.code == "pipeline-consumer-duplicate"
    assert "tests.unit.test_ingest_consumers and shop.pipelines" in str(refused.value)


def test_a_key_declared_twice_in_one_module_is_refused(forget):
    forget("again")
    first = products.consumer("again")(lambda position: ([], position))
    with pytest.raises(DeclarationError) as refused:
        products.consumer("again")(lambda position: ([], None))
    assert refused.value.code == "pipeline-consumer-duplicate"
    assert f"twice (in {__name__})" in str(refused.value)
    assert consumers["tests.catalog:again"] is first


def test_an_undeclared_consumer_is_not_found():
    with pytest.raises(ConsumerNotFound) as refused:
        find("tests.catalog", "vendor-z")
    assert refused.value.code == "ingest-consumer-unknown"


@pytest.mark.parametrize(("pipeline", "key"), [("p" * 200, "k" * 100), ("tests.catalog", "x")])
def test_the_consume_jobs_key_and_concurrency_key_fit_whatever_the_names(pipeline, key):
    definition = catalog.get(CONSUME_JOB)
    row = definition.prepare({"pipeline": pipeline, "consumer": key, "lane": "a"})
    assert len(row.key) <= 300
    assert len(row.concurrency_key) <= 200
    assert row.concurrency_key == f"ingest-consume:{label(pipeline, key)}"
    assert row.key == f"{row.concurrency_key}:a"


def test_a_long_label_is_shortened_and_stays_distinct():
    assert label("tests.catalog", "vendor-a") == "tests.catalog:vendor-a"
    first, second = label("p" * 200, "k" * 99 + "1"), label("p" * 200, "k" * 99 + "2")
    assert len(first) == len(second) == LABEL_MAX
    assert first != second
