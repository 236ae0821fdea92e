"""Paying a payout: what the ``payouts.release`` bulk money action executes for each item."""

from __future__ import annotations

from litejobs import Permanent, clock

from .models import Payout, PayoutState


class PayoutAlreadyPaid(Permanent):
    """The payout was paid by another bulk action: paying it again would pay twice."""


def release_payout(payout: Payout, run) -> str:
    """Pay ``payout`` once, inside the bulk item's transaction; answers a note for the record.

    Idempotent on the item's key: the row is locked, and a payout already paid by this same
    bulk action answers so without paying again; one paid by another action is refused
    (``PayoutAlreadyPaid``, which fails the item at once). A real integration would call the
    bank here with ``run.key`` as its idempotency key, paying ``run.bound["account"]``: the
    account the code confirmed (litejobs checked the locked row still names it).
    """
    locked = Payout.objects.select_for_update().get(pk=payout.pk)
    if locked.state == PayoutState.PAID:
        if locked.paid_by_bulk_action_id == run.bulk_action.pk:
            return f"already paid by bulk action #{run.bulk_action.pk}"
        raise PayoutAlreadyPaid(
            f"Payout {locked.reference} was already paid by bulk action "
            f"#{locked.paid_by_bulk_action_id} at {locked.paid_at:%Y-%m-%d %H:%M} UTC; it was "
            "not paid again."
        )
    locked.state = PayoutState.PAID
    locked.paid_at = clock.now()
    locked.paid_by_bulk_action = run.bulk_action
    locked.save(update_fields=["state", "paid_at", "paid_by_bulk_action"])
    return f"paid {locked.currency} {locked.amount:,.2f} to {locked.payee}"
