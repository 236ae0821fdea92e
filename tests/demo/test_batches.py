"""The demo's nightly receipts batch: every missing receipt of a day is a child, and the
summary is sent once, with the counts, when the last has ended."""

from datetime import UTC, datetime

import pytest
from django.core import mail

from litejobs.models import Batch, Job
from project.orders.jobs import send_missing_receipts
from project.orders.models import Order


@pytest.mark.django_db(transaction=True)
def test_the_nightly_receipts_batch_sends_one_summary(clock, run_worker):
    day = datetime(2026, 2, 28, 10, tzinfo=UTC)
    for n in range(3):
        Order.objects.create(
            customer_email=f"c{n}@example.com", total=10 + n, currency="EUR", created_at=day
        )
    send_missing_receipts.enqueue(day="2026-02-28")
    run_worker()
    run_worker()
    run_worker()
    [batch] = Batch.objects.all()
    assert (batch.total, batch.done, batch.state) == (3, 3, "completed")
    summaries = [m for m in mail.outbox if m.subject.startswith("Nightly receipts")]
    assert [m.subject for m in summaries] == ["Nightly receipts: 3 sent, 0 failed, 0 cancelled"]
    assert Job.objects.filter(name__endswith="receipts_summary", state="done").count() == 1
