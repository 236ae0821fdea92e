"""The demo marketplace's products, written only by the vendor catalog's ingest pipeline."""

from django.db import models


class Product(models.Model):
    """A product of the vendor's catalog as the ``catalog.vendor`` pipeline last wrote it: the
    vendor's price in the vendor's currency, and that price in euros."""

    sku = models.CharField(max_length=40, unique=True)
    name = models.CharField(max_length=200)
    price = models.DecimalField(
        max_digits=12, decimal_places=2, help_text="The vendor's price, in its currency."
    )
    currency = models.CharField(max_length=3)
    price_eur = models.DecimalField(
        max_digits=12, decimal_places=2, help_text="The price in euros, at the demo's rates."
    )

    class Meta:
        ordering = ["sku"]

    def __str__(self) -> str:
        return f"{self.sku}: {self.name}"
