"""Fixtures of the work-queue and bulk money tests: the people who work the queues, and queues
declared for one test."""

from __future__ import annotations

import pytest

from litejobs.workqueues import declarations as queues
from tests.factories import UserFactory
from tests.testapp.factories import DisputeFactory, FinanceFactory


@pytest.fixture
def reviewers(db):
    """alice and bob may work the dispute queue; carol is staff without its permission."""
    return (
        UserFactory(
            username="alice", permissions=["testapp.review_dispute", "testapp.view_dispute"]
        ),
        UserFactory(username="bob", permissions=["testapp.review_dispute", "testapp.view_dispute"]),
        UserFactory(username="carol", permissions=["testapp.view_dispute"]),
    )


@pytest.fixture
def declare_queue():
    """Declare work queues over disputes for one test (forgotten afterwards)."""
    names: list[str] = []

    def make(name: str, **options):
        options.setdefault("model", DisputeFactory._meta.model)
        options.setdefault("permission", "testapp.review_dispute")
        queue = queues.work_queue(name, **options)
        names.append(name)
        return queue

    yield make
    for name in names:
        queues.unregister(name)


@pytest.fixture
def finance(db):
    """fiona may release payouts and has the finance phone (a confirmed TOTP device)."""
    return FinanceFactory()


@pytest.fixture
def declare_pipeline():
    """Declare pipelines for one test (forgotten afterwards), like tests.catalog but with the
    options given."""
    from litejobs import pipeline
    from litejobs.ingest.declarations import pipelines as registry
    from tests.testapp import pipelines

    names: list[str] = []

    def make(name: str, **options):
        options = {
            "steps": [pipelines.parse, pipelines.price_in_eur, pipelines.below_threshold],
            "drop_reasons": pipelines.Reason,
            "sources": {"rates": pipelines.RATES},
            "key": lambda r: r["sku"],
            "sink": pipelines.save_product,
            **options,
        }
        names.append(name)
        return pipeline(name, **options)

    yield make
    for name in names:
        registry.unregister(name)
