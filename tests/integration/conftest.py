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
