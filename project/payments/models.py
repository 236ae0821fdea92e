"""The demo marketplace's payment disputes, reviewed by staff in the ``disputes`` work queue."""

from django.db import models


class Dispute(models.Model):
    """A customer's dispute of a payment: how much, since when, and whether evidence came in."""

    reference = models.CharField(max_length=20, unique=True)
    customer_email = models.EmailField()
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3, default="EUR")
    reason = models.CharField(max_length=100)
    opened_at = models.DateTimeField()
    evidence_provided = models.BooleanField(default=False)

    class Meta:
        ordering = ["-opened_at"]
        permissions = [("review_dispute", "Can review disputes in the dispute work queue")]

    def __str__(self) -> str:
        return f"{self.reference}: {self.currency} {self.amount} ({self.reason})"
