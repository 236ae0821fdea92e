"""The demo's payouts queue and the bulk money action finance releases payouts with.

Payouts wait oldest first; anyone with ``payouts.review_payout`` sees the queue (and may hold
or reject a payout by hand), but money moves only through ``payouts.release``: finance ticks
payouts, reads the preview (every payout, its amount, its payee and account, the totals per
currency) and confirms with the TOTP code of their phone. Each payout is then paid by its own
job, once — and only to the payee and account the code confirmed.
"""

from litejobs.bulk import bulk_money_action
from litejobs.workqueues import work_queue

from .models import Payout
from .services import release_payout

payouts = work_queue(
    "payouts",
    model=Payout,
    claim="optional",
    claim_lease="1h",
    permission="payouts.review_payout",
    resolutions=[("rejected", "Reject")],
    label="Payouts",
    description="Pending payouts to sellers; finance releases them in bulk with a TOTP code.",
)


def payout_amount(payout: Payout):
    """What releasing the payout pays: its amount, in its currency."""
    return payout.amount, payout.currency


release = bulk_money_action(
    "payouts.release",
    queue=payouts,
    amount=payout_amount,
    # Who gets paid, and where: bound into the confirmation, re-checked before paying.
    bind=("payee", "account"),
    execute=release_payout,
    permission="payouts.release_payout",
    label="Release payouts",
    description="Pays each payout to its payee, marks it paid by this bulk action, and takes "
    "it out of the queue as released. Each payout is paid by its own job, once.",
    resolution="released",
)
