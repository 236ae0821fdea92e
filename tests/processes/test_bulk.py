"""A real worker killed with SIGKILL in the middle of a bulk money action's batch."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from django_otp.plugins.otp_totp.models import TOTPDevice

from litejobs import bulk
from litejobs.models import BulkAction, Job, JobState
from tests.bulk_helpers import fresh_code, item_of
from tests.conftest import wait_for
from tests.testapp.factories import FinanceFactory, PayoutFactory
from tests.testapp.models import Payout
from tests.testapp.queues import GATED_PAYEE

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = {"LEASE": "3s", "HEARTBEAT": "1s", "POLL_INTERVAL": "2s"}


def test_a_worker_killed_mid_batch_leaves_every_payout_paid_exactly_once(processes, tmp_path):
    finance = FinanceFactory()
    payouts = [
        PayoutFactory(amount=f"{10 + n}.00", currency="EUR" if n % 2 else "USD") for n in range(12)
    ]
    payouts.insert(5, PayoutFactory(amount="99.00", payee=GATED_PAYEE))
    made = bulk.preview("payouts.release_gated", [item_of(p).pk for p in payouts], finance)
    record = bulk.confirm(
        made.token, fresh_code(TOTPDevice.objects.get(user=finance)), finance
    ).bulk_action
    gated = record.items.get(object_id=str(payouts[5].pk))

    gate = tmp_path / "gate"
    env = processes.env(**FAST)
    env["LITEJOBS_TEST_BULK_GATE"] = str(gate)
    first = processes.start("runworker", "--concurrency", "1", env=env, name="worker")
    # Inside the gated payout's transaction: it is marked paid there, not yet committed.
    wait_for(lambda: Path(f"{gate}.started.1").exists(), timeout=60, what="the gated payout")
    assert 0 < Payout.objects.filter(state="paid").count() < len(payouts)  # mid-batch
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)
    assert Payout.objects.get(pk=payouts[5].pk).state == "pending"  # rolled back with it

    processes.start("runworker", "--concurrency", "2", env=env, name="worker")
    wait_for(lambda: Path(f"{gate}.started.2").exists(), timeout=60, what="the re-run")
    gate.touch()
    wait_for(
        lambda: bulk.summary(record).status != "executing",
        timeout=60,
        what="every item of the batch to reach an outcome",
    )

    assert bulk.summary(record).status == "succeeded"
    for payout in Payout.objects.all():
        assert (payout.state, payout.paid_by_bulk_action_id) == ("paid", record.pk)
    items = list(record.items.all())
    assert len(items) == len(payouts) == record.item_count
    # Each payout's money moved in exactly one committed execution: a second execution
    # would have found it paid and said so ("already paid ...") instead.
    assert all(item.state == "succeeded" and item.note.startswith("paid ") for item in items)
    gated.refresh_from_db()
    assert gated.attempts == 2  # the killed attempt left no outcome; the re-run paid it
    jobs = Job.objects.filter(name=bulk.ITEM_JOB)
    # An item's outcome commits before its job's completion (atomic=False: a batched ack).
    wait_for(
        lambda: not jobs.filter(state=JobState.RUNNING).exists(),
        timeout=10,
        what="the item jobs' completions",
    )
    assert jobs.count() == len(payouts)
    assert set(jobs.values_list("state", flat=True)) == {JobState.DONE}
    assert BulkAction.objects.count() == 1
