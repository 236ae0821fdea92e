"""The demo's human work queue: disputes, reviewed by urgency (amount, age, missing evidence).

Claims are required: a reviewer claims a dispute (or "Claim the next item") before refunding,
contesting or escalating it, so two reviewers clearing the queue side by side never act on the
same dispute. A claim lasts an hour; an abandoned one returns to the queue by itself.
"""

from decimal import Decimal

from litejobs import clock
from litejobs.workqueues import score_rule, work_queue

from .models import Dispute

#: Points per part of the urgency (at most 40 + 35 + 20 = 95).
AMOUNT_POINTS_PER = Decimal(50)  # one point per EUR 50, up to 40
AMOUNT_POINTS_MAX = 40
AGE_POINTS_PER_DAY = 4  # four points a day, up to 35
AGE_POINTS_MAX = 35
MISSING_EVIDENCE_POINTS = 20


def money(amount: Decimal, currency: str) -> str:
    """``EUR 1,900`` (cents only when there are some: ``EUR 12.50``)."""
    text = f"{amount:,.2f}"
    return f"{currency} {text.removesuffix('.00')}"


@score_rule("dispute.urgency")
def urgency(dispute: Dispute):
    """Larger, older disputes without evidence first: they cost the most when lost by default."""
    days = max((clock.now() - dispute.opened_at).days, 0)
    amount_points = min(AMOUNT_POINTS_MAX, int(dispute.amount // AMOUNT_POINTS_PER))
    age_points = min(AGE_POINTS_MAX, days * AGE_POINTS_PER_DAY)
    evidence_points = 0 if dispute.evidence_provided else MISSING_EVIDENCE_POINTS
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
    permission="payments.review_dispute",
    resolutions=[("refund", "Refund"), ("contest", "Contest"), ("escalate", "Escalate")],
    label="Dispute review",
    description="Refund, contest or escalate each dispute; the most urgent first.",
)
