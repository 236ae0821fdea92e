"""The demo marketplace's orders, each of one of its two tenants (shops), north and south."""

from django.conf import settings
from django.db import models


class Tenant(models.TextChoices):
    """The demo's tenants: each exports its own orders only."""

    NORTH = "north", "North"
    SOUTH = "south", "South"


class Order(models.Model):
    """A customer's order; creating one enqueues its receipt in the same transaction."""

    class Status(models.TextChoices):
        PAID = "paid", "Paid"
        REFUNDED = "refunded", "Refunded"
        PENDING = "pending", "Pending"

    tenant = models.CharField(max_length=20, choices=Tenant.choices, default=Tenant.NORTH)
    customer_email = models.EmailField()
    total = models.DecimalField(max_digits=10, decimal_places=2)
    currency = models.CharField(max_length=3, default="EUR")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PAID)
    note = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField()
    receipt_sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        # The orders.export report: a tenant's orders of a range, as a spreadsheet.
        permissions = [("export_order", "Can export orders")]

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


class Member(models.Model):
    """Which tenant a staff user works for: the orders reports read that tenant's orders only."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="member"
    )
    tenant = models.CharField(max_length=20, choices=Tenant.choices)

    def __str__(self) -> str:
        return f"{self.user} ({self.tenant})"
