"""The test app's work queues and bulk money actions.

- ``disputes``: reviewed by urgency (the ``dispute.urgency`` score rule), claims required.
- ``payouts``: released in bulk with a TOTP code by ``payouts.release``, which pays each payout
  once, to the payee and account the code confirmed.
- ``payouts.release_gated``: the same release, held at a gate file for one payee, so that
  ``tests/processes/test_bulk.py`` can kill a real worker inside that payout's transaction. The
  worker process reads the gate's path from ``LITEJOBS_TEST_BULK_GATE``; the payout whose payee
  is ``GATED_PAYEE`` announces it started (``<gate>.started.<attempt>``) and waits until the gate
  file exists. Without the variable it pays like ``payouts.release``.
"""

import os
import time
from decimal import Decimal
from pathlib import Path

from litejobs import Permanent, clock
from litejobs.bulk import bulk_money_action
from litejobs.workqueues import score_rule, work_queue

from .models import Dispute, Payout

# Disputes ----------------------------------------------------------------------------------


def money(amount: Decimal, currency: str) -> str:
    """``EUR 1,900`` (cents only when there are some: ``EUR 12.50``)."""
    return f"{currency} {f'{amount:,.2f}'.removesuffix('.00')}"


@score_rule("dispute.urgency")
def urgency(dispute: Dispute):
    """Larger, older disputes without evidence first: a point per EUR 50 (up to 40), four a day
    (up to 35), and 20 while evidence is missing."""
    days = max((clock.now() - dispute.opened_at).days, 0)
    amount_points = min(40, int(dispute.amount // 50))
    age_points = min(35, days * 4)
    evidence_points = 0 if dispute.evidence_provided else 20
    return amount_points + age_points + evidence_points, {
        "amount": money(dispute.amount, dispute.currency),
        "age": "1 day" if days == 1 else f"{days} days",
        "evidence": "evidence provided" if dispute.evidence_provided else "evidence missing",
    }


disputes = work_queue(
    "disputes",
    model=Dispute,
    claim="required",
    score="dispute.urgency",
    claim_lease="1h",
    permission="testapp.review_dispute",
    resolutions=[("refund", "Refund"), ("contest", "Contest"), ("escalate", "Escalate")],
    label="Dispute review",
    description="Refund, contest or escalate each dispute; the most urgent first.",
)

# Payouts -----------------------------------------------------------------------------------

payouts = work_queue(
    "payouts",
    model=Payout,
    claim="optional",
    claim_lease="1h",
    permission="testapp.review_payout",
    resolutions=[("rejected", "Reject")],
    label="Payouts",
    description="Pending payouts; finance releases them in bulk with a TOTP code.",
)


class PayoutAlreadyPaid(Permanent):
    """The payout was paid by another bulk action: paying it again would pay twice."""


def payout_amount(payout: Payout):
    """What releasing the payout pays: its amount, in its currency."""
    return payout.amount, payout.currency


def release_payout(payout: Payout, run) -> str:
    """Pay ``payout`` once, inside the bulk item's transaction; answers a note for the record.

    The row is locked; a payout already paid by this same bulk action answers so without paying
    again, one paid by another action is refused (``PayoutAlreadyPaid`` fails the item at once).
    """
    locked = Payout.objects.select_for_update().get(pk=payout.pk)
    if locked.state == Payout.State.PAID:
        if locked.paid_by_bulk_action_id == run.bulk_action.pk:
            return f"already paid by bulk action #{run.bulk_action.pk}"
        raise PayoutAlreadyPaid(
            f"Payout {locked.reference} was already paid by bulk action "
            f"#{locked.paid_by_bulk_action_id}; it was not paid again."
        )
    locked.state = Payout.State.PAID
    locked.paid_at = clock.now()
    locked.paid_by_bulk_action = run.bulk_action
    locked.save(update_fields=["state", "paid_at", "paid_by_bulk_action"])
    return f"paid {locked.currency} {locked.amount:,.2f} to {locked.payee}"


release = bulk_money_action(
    "payouts.release",
    queue=payouts,
    amount=payout_amount,
    # Who gets paid, and where: bound into the confirmation, re-checked before paying.
    bind=("payee", "account"),
    execute=release_payout,
    permission="testapp.release_payout",
    label="Release payouts",
    description="Pays each payout to its payee, marks it paid by this bulk action, and takes "
    "it out of the queue as released. Each payout is paid by its own job, once.",
    resolution="released",
)

GATED_PAYEE = "Gated payee"


def gated_release(payout: Payout, run) -> str:
    """``release_payout``, held at the gate for the gated payee (the payout row is locked)."""
    note = release_payout(payout, run)
    gate = os.environ.get("LITEJOBS_TEST_BULK_GATE")
    if gate and payout.payee == GATED_PAYEE:
        Path(f"{gate}.started.{run.attempt}").write_text(str(os.getpid()))
        while not Path(gate).exists():
            time.sleep(0.02)
    return note


release_gated = bulk_money_action(
    "payouts.release_gated",
    queue=payouts,
    amount=payout_amount,
    bind=("payee", "account"),
    execute=gated_release,
    permission="testapp.release_payout",
    label="Release payouts (gated, tests)",
)
