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


class Checkout(models.Model):
    """A checkout carried by a durable saga: charge, reserve, ship — or undo what was done.

    The references are written by the saga's steps (``orders.jobs.run_checkout``) in the same
    transactions as the steps' records, so the admin shows exactly what happened.
    """

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        SHIPPED = "shipped", "Shipped"
        UNDONE = "undone", "Undone (compensated)"

    customer_email = models.EmailField()
    address = models.CharField(max_length=200)
    total = models.DecimalField(max_digits=10, decimal_places=2)
    currency = models.CharField(max_length=3, default="EUR")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    charge_ref = models.CharField(max_length=40, blank=True, default="")
    reservation_ref = models.CharField(max_length=40, blank=True, default="")
    shipment_ref = models.CharField(max_length=40, blank=True, default="")
    refunded_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"Checkout #{self.pk} ({self.state})"
