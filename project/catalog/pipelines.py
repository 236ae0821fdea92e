"""The vendor catalog feed: the vendor's CSV goes through ``catalog.vendor`` into ``Product``.

Steps run in the order listed: a row identical to the product already stored for its sku is
dropped as a duplicate (it would change nothing), its price is converted from the vendor's
currency to euros, and a product under ``THRESHOLD`` euros is dropped as below the threshold.
A row whose price is not a number, or whose currency the rates do not know, makes a step
raise: after three attempts it is dropped as poison, kept with the others for a replay after
the fix. Every drop carries one reason of ``Reason``, and the admin counts them by reason.
"""

from __future__ import annotations

import enum
from decimal import Decimal, InvalidOperation
from typing import Any

from litejobs import Buffer, Files, Freshness, drop, enrich, pipeline

from .models import Product

#: The demo's fixed exchange rates to euros: a real project reads them from its rates table.
RATES = {
    "EUR": Decimal("1"),
    "USD": Decimal("0.92"),
    "GBP": Decimal("1.17"),
    "CHF": Decimal("1.05"),
    "SEK": Decimal("0.088"),
}
#: Products under this many euros are not worth listing.
THRESHOLD = Decimal("1.00")
CENT = Decimal("0.01")


class Reason(enum.Enum):
    """Why a catalog row was dropped: the pipeline's closed set."""

    DUPLICATE = "duplicate"
    BELOW_THRESHOLD = "below_threshold"
    POISON = "poison"
    OVERFLOW = "overflow"


class PriceInvalid(ValueError):
    """A row's price is not a finite, non-negative number."""


def parse_price(text: str) -> Decimal:
    """The vendor's price text as a ``Decimal`` to the cent, as ``Product`` stores it."""
    try:
        price = Decimal(text)
    except InvalidOperation:
        raise PriceInvalid("the price is not a number") from None
    if not price.is_finite() or price < 0:
        raise PriceInvalid("the price is not a finite, non-negative number")
    return price.quantize(CENT)


@drop(reasons={Reason.DUPLICATE})
def drop_duplicates(record: dict[str, Any]) -> Reason | None:
    """A row identical to the product stored for its sku is a duplicate: writing it again
    would change nothing. Reads the database, so a repeat later in the same file (or a
    file imported again) is caught once the first row is written."""
    stored = (
        Product.objects.filter(sku=record["sku"]).values_list("name", "price", "currency").first()
    )
    if stored is None:
        return None
    try:
        price = parse_price(record["price"])
    except PriceInvalid:
        return None  # not a price at all: enrich_prices refuses it
    return Reason.DUPLICATE if stored == (record["name"], price, record["currency"]) else None


@enrich(sources={"rates"})
def enrich_prices(record: dict[str, Any], sources: Any) -> dict[str, Any]:
    """The row with ``price_eur``: its price converted from its currency at the rates
    source's rate. Raises on a price that is no number or a currency without a rate."""
    rate = sources["rates"][record["currency"]]
    return {**record, "price_eur": (parse_price(record["price"]) * rate).quantize(CENT)}


@drop(reasons={Reason.BELOW_THRESHOLD})
def drop_below_threshold(record: dict[str, Any]) -> Reason | None:
    """A product under ``THRESHOLD`` euros is not listed."""
    return Reason.BELOW_THRESHOLD if record["price_eur"] < THRESHOLD else None


def save_product(record: dict[str, Any]) -> None:
    """Write the row's product, created or updated by sku (a replayed row writes it again,
    no second product)."""
    Product.objects.update_or_create(
        sku=record["sku"],
        defaults={
            "name": record["name"],
            "price": parse_price(record["price"]),
            "currency": record["currency"],
            "price_eur": record["price_eur"],
        },
    )


def sku(record: dict[str, Any]) -> str:
    """A row's key: its sku."""
    return str(record["sku"])


catalog = pipeline(
    "catalog.vendor",
    steps=[drop_duplicates, enrich_prices, drop_below_threshold],
    drop_reasons=Reason,
    sources={"rates": RATES},
    key=sku,
    columns=["sku", "name", "price", "currency"],
    sink=save_product,
    # The vendor may also push changes with catalog.feed(); past 5,000 waiting rows the
    # oldest are dropped as overflow (counted, kept for a replay), never lost silently.
    buffer=Buffer(capacity=5_000, overflow="drop_oldest", reason=Reason.OVERFLOW),
    batch_size=100,
    # The vendor's system holds the truth about its products; this is the shop's copy.
    freshness=Freshness.advisory(authority="vendor"),
    max_record_bytes=2048,
    # The vendor's files land in the media storage's feeds/ folder; imports read no other.
    files=Files(prefix="feeds/"),
)
