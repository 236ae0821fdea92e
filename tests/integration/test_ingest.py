"""Ingest pipelines: feeding, the drain's processing, drops, poison, overflow, replay."""

from __future__ import annotations

import pytest

from litejobs.models import BufferedRecord, SetAsideRecord
from tests.testapp import pipelines
from tests.testapp.models import Product

pytestmark = pytest.mark.django_db(transaction=True)


def record(sku, price="10", **fields):
    return {"sku": sku, "name": f"Product {sku}", "price": price, "currency": "EUR",
            "status": "active", **fields}


@pytest.fixture(autouse=True)
def _forget_calls():
    pipelines.calls.clear()
    pipelines.attempts.clear()


def test_fed_records_land_through_the_steps_in_order(run_worker):
    pipelines.catalog.feed([record("A"), record("B", status="discontinued"), record("C", "0.5")])
    run_worker(queues=["ingest"])
    assert list(Product.objects.values_list("sku", flat=True)) == ["A"]
    assert pipelines.catalog.stats() == {
        "accepted": 1, "dropped": {"discontinued": 1, "below_threshold": 1}, "errored": 0,
    }
    assert not BufferedRecord.objects.exists()
    assert [c for c in pipelines.calls if c[1] == "A"] == [
        ("parse", "A"), ("price_in_eur", "A"), ("below_threshold", "A"), ("sink", "A"),
    ]
    assert SetAsideRecord.objects.count() == 2
