"""factory-boy factories of the test app's rows: disputes and payouts for its work queues and
bulk money action, and finance users who release the payouts with a TOTP device."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import factory
from factory.django import DjangoModelFactory

from litejobs import clock, workqueues
from tests.factories import TOTPDeviceFactory, UserFactory, grant

from .models import Dispute, Payout

#: What finance holds: the payouts queue's permission, the release action's, viewing payouts.
FINANCE_PERMISSIONS = ("testapp.review_payout", "testapp.release_payout", "testapp.view_payout")


class FinanceFactory(UserFactory):
    """fiona, who may release payouts, with the finance phone (``device=None``: without)."""

    username = "fiona"
    device = factory.RelatedFactory(TOTPDeviceFactory, factory_related_name="user")

    @factory.post_generation
    def permissions(user, create, extracted, **kwargs):
        grant(user, FINANCE_PERMISSIONS if extracted is None else extracted)


class DisputeFactory(DjangoModelFactory):
    """A dispute of ``amount`` EUR opened ``days`` ago (and a few minutes more per dispute, so
    that no two are the same age)."""

    class Meta:
        model = Dispute

    class Params:
        days = 1

    reference = factory.Sequence(lambda n: f"T-{n:05d}")
    customer_email = factory.Sequence(lambda n: f"c{n}@example.com")
    amount = Decimal("100")
    currency = "EUR"
    reason = "not received"
    opened_at = factory.LazyAttributeSequence(
        lambda dispute, n: clock.now() - timedelta(days=dispute.days, minutes=n)
    )
    evidence_provided = False

    @classmethod
    def _adjust_kwargs(cls, **kwargs):
        kwargs["amount"] = Decimal(kwargs["amount"])
        return kwargs


class PayoutFactory(DjangoModelFactory):
    """A pending payout of ``amount`` to Acme, queued in ``payouts`` as the app queues one."""

    class Meta:
        model = Payout
        skip_postgeneration_save = True

    reference = factory.Sequence(lambda n: f"T-PO-{n:05d}")
    payee = "Acme"
    account = "DE00 1111 2222 3333 4444 55"
    amount = Decimal("100.00")
    currency = "EUR"
    created_at = factory.LazyFunction(clock.now)

    @classmethod
    def _adjust_kwargs(cls, **kwargs):
        kwargs["amount"] = Decimal(kwargs["amount"])
        return kwargs

    @factory.post_generation
    def queued(payout, create, extracted, **kwargs):
        if create:
            workqueues.enqueue_item("payouts", payout)
