"""The demo marketplace's orders."""

from django.db import models


class Order(models.Model):
    """A customer's order; creating one enqueues its receipt in the same transaction."""

    customer_email = models.EmailField()
    total = models.DecimalField(max_digits=10, decimal_places=2)
    currency = models.CharField(max_length=3, default="EUR")
    created_at = models.DateTimeField()
    receipt_sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"Order #{self.pk} ({self.total} {self.currency})"
