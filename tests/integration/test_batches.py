"""Batches with one callback: children join in the caller's transaction, the callback is
released exactly once by the transaction that ends the last child, with the counts."""

from __future__ import annotations

import pytest
from django.db import transaction

import litejobs
from litejobs.batches import BatchClosed, BatchInvalid
from litejobs.jobs import operations
from litejobs.models import Batch, Job
from tests.testapp.batchjobs import alarm, child, parent, summary
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db(transaction=True)


def marks(prefix: str) -> list[str]:
    return sorted(Mark.objects.filter(label__startswith=prefix).values_list("label", flat=True))


def test_callback_once_with_counts(clock, run_worker):
    with litejobs.batch(on_complete=summary, on_failure=alarm) as b:
        child.enqueue(label="a")
        child.enqueue(label="b", outcome="fail")
        cancelled = child.enqueue(label="c")
        child.enqueue_many([{"label": "d"}, {"label": "e"}])
    operations.cancel(cancelled.id, by="test")
    record = b.record()
    assert (record.total, record.pending, record.cancelled) == (5, 4, 1)
    run_worker()
    run_worker()
    assert marks("summary:") == [f"summary:{b.id}:3:1:1"]
    assert marks("alarm:") == [f"alarm:{b.id}"]
    record = b.record()
    assert record.state == "completed" and record.pending == 0
