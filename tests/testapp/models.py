"""The test app's rows: the effects job bodies write (tests count them), and the disputes and
payouts its work queues and bulk money action act on."""

from django.db import models


class Mark(models.Model):
    """One effect of a job body (label + value); tests count them."""

    label = models.CharField(max_length=100)
    value = models.IntegerField(default=0)
    note = models.CharField(max_length=200, blank=True, default="")

    def __str__(self) -> str:
        return f"{self.label}={self.value}"


class Dispute(models.Model):
    """A customer's dispute of a payment, reviewed in the ``disputes`` work queue."""

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


class Payout(models.Model):
    """Money owed to a payee: it waits in the ``payouts`` work queue until the
    ``payouts.release`` bulk money action pays it, once, recording by which confirmed action."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        PAID = "paid", "Paid"

    reference = models.CharField(max_length=20, unique=True)
    payee = models.CharField(max_length=100)
    account = models.CharField(max_length=34, default="")
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    created_at = models.DateTimeField()
    paid_at = models.DateTimeField(null=True, blank=True)
    paid_by_bulk_action = models.ForeignKey(
        "litejobs.BulkAction", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["created_at", "id"]
        permissions = [
            ("review_payout", "Can see and work the payouts queue"),
            ("release_payout", "Can release payouts in bulk with a TOTP code"),
        ]

    def __str__(self) -> str:
        return f"{self.reference}: {self.currency} {self.amount:,.2f} to {self.payee}"


class Product(models.Model):
    """A catalog product, written by the ``tests.catalog`` ingest pipeline's sink."""

    sku = models.CharField(max_length=50, unique=True)
    name = models.CharField(max_length=200)
    price_eur = models.DecimalField(max_digits=12, decimal_places=2)
    writes = models.IntegerField(default=1, help_text="How many times the sink wrote it.")

    def __str__(self) -> str:
        return f"{self.sku}: {self.name}"


class Member(models.Model):
    """Which tenant a user of the tests works for (the reports' ``tenant=`` reads it)."""

    user = models.OneToOneField("auth.User", on_delete=models.CASCADE, related_name="member")
    tenant = models.CharField(max_length=50)

    def __str__(self) -> str:
        return f"{self.user} of {self.tenant}"


class Sale(models.Model):
    """A tenant's sale, read by the ``tests.sales`` report."""

    tenant = models.CharField(max_length=50)
    number = models.CharField(max_length=20)
    customer = models.CharField(max_length=200)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    status = models.CharField(max_length=20, default="paid")
    note = models.TextField(blank=True, default="")
    formula = models.TextField(blank=True, default="")
    placed = models.DateField()

    class Meta:
        permissions = [("export_sale", "Can export sales")]
        indexes = [models.Index(fields=["tenant", "placed"], name="testapp_sale_tenant_placed")]

    def __str__(self) -> str:
        return f"{self.tenant} {self.number}"
