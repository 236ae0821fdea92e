"""The demo marketplace's payouts to sellers, released in bulk by finance with a TOTP code."""

from django.db import models
from django.db.models import Q


class PayoutState(models.TextChoices):
    PENDING = "pending", "Pending"
    PAID = "paid", "Paid"


class Payout(models.Model):
    """Money owed to a seller. It waits in the ``payouts`` work queue until finance releases it
    with the ``payouts.release`` bulk money action, which pays it once and records by which
    confirmed bulk action."""

    reference = models.CharField(max_length=20, unique=True)
    payee = models.CharField(max_length=100)
    account = models.CharField(
        max_length=34, default="", help_text="The payee's bank account (IBAN) it is paid to."
    )
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3, choices=[("EUR", "EUR"), ("USD", "USD")])
    state = models.CharField(max_length=10, choices=PayoutState.choices, default="pending")
    created_at = models.DateTimeField()
    paid_at = models.DateTimeField(null=True, blank=True)
    paid_by_bulk_action = models.ForeignKey(
        "litejobs.BulkAction",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The confirmed bulk money action that paid it.",
    )

    class Meta:
        ordering = ["created_at", "id"]
        permissions = [
            ("review_payout", "Can see and work the payouts queue"),
            ("release_payout", "Can release payouts in bulk with a TOTP code"),
        ]
        constraints = [
            # Paid means paid by a bulk action at a time; pending means neither.
            models.CheckConstraint(
                condition=(
                    Q(state="paid", paid_at__isnull=False, paid_by_bulk_action__isnull=False)
                    | Q(state="pending", paid_at__isnull=True, paid_by_bulk_action__isnull=True)
                ),
                name="payouts_payout_paid_complete",
            ),
            models.CheckConstraint(condition=Q(amount__gt=0), name="payouts_payout_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.reference}: {self.currency} {self.amount:,.2f} to {self.payee}"
