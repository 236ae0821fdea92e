"""A bulk money action over the demo's payouts whose execute can be held at a gate file.

``tests/processes/test_bulk.py`` kills a real worker while it is inside one payout's
transaction: the worker process reads the gate's path from ``LITEJOBS_TEST_BULK_GATE``, and the
payout whose payee is ``GATED_PAYEE`` announces it started (``<gate>.started.<attempt>``) and
waits until the gate file exists. Without the variable it pays like the demo's action.
"""

import os
import time
from pathlib import Path

from litejobs.bulk import bulk_money_action
from project.payouts.queues import payout_amount
from project.payouts.services import release_payout

GATED_PAYEE = "Gated payee"


def gated_release(payout, run):
    """The demo's release, held at the gate for the gated payee (the payout row is locked)."""
    note = release_payout(payout, run)
    gate = os.environ.get("LITEJOBS_TEST_BULK_GATE")
    if gate and payout.payee == GATED_PAYEE:
        Path(f"{gate}.started.{run.attempt}").write_text(str(os.getpid()))
        while not Path(gate).exists():
            time.sleep(0.02)
    return note


release_gated = bulk_money_action(
    "payouts.release_gated",
    queue="payouts",
    amount=payout_amount,
    bind=("payee", "account"),
    execute=gated_release,
    permission="payouts.release_payout",
    label="Release payouts (gated, tests)",
)
