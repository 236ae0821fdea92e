"""The demo's stand-ins for a payment provider, a stock system and a carrier.

Each call records what it did on the ``Checkout`` row, inside the saga step's transaction, and
is safe to call again (it answers the reference it already made): the kind of service a
durable step calls.
"""

from django.db import transaction

from litejobs import Permanent, clock

from .models import Checkout

#: An address the demo carrier refuses, to show compensation in the admin.
UNDELIVERABLE = "nowhere"


def _locked(checkout_id: int) -> Checkout:
    return Checkout.objects.select_for_update().get(pk=checkout_id)


def charge(checkout_id: int) -> dict:
    """Charge the customer once; answers the charge reference."""
    with transaction.atomic():
        checkout = _locked(checkout_id)
        if not checkout.charge_ref:
            checkout.charge_ref = f"ch_{checkout.pk:06d}"
            checkout.save(update_fields=["charge_ref"])
        return {"charge": checkout.charge_ref}


def refund(checkout_id: int, charge_ref: str) -> None:
    """Refund a charge (the saga's compensation of ``charge``)."""
    with transaction.atomic():
        checkout = _locked(checkout_id)
        if checkout.charge_ref == charge_ref and checkout.refunded_at is None:
            checkout.refunded_at = clock.now()
            checkout.state = Checkout.State.UNDONE
            checkout.save(update_fields=["refunded_at", "state"])


def reserve(checkout_id: int) -> dict:
    """Reserve the goods once; answers the reservation reference."""
    with transaction.atomic():
        checkout = _locked(checkout_id)
        if not checkout.reservation_ref:
            checkout.reservation_ref = f"res_{checkout.pk:06d}"
            checkout.save(update_fields=["reservation_ref"])
        return {"reservation": checkout.reservation_ref}


def release(checkout_id: int, reservation_ref: str) -> None:
    """Release a reservation (the saga's compensation of ``reserve``)."""
    with transaction.atomic():
        checkout = _locked(checkout_id)
        if checkout.reservation_ref == reservation_ref and checkout.released_at is None:
            checkout.released_at = clock.now()
            checkout.save(update_fields=["released_at"])


def ship(checkout_id: int) -> dict:
    """Hand the parcel to the carrier, who refuses an undeliverable address for good."""
    with transaction.atomic():
        checkout = _locked(checkout_id)
        if UNDELIVERABLE in checkout.address.lower():
            raise Permanent(f"the carrier cannot deliver to {checkout.address!r}")
        if not checkout.shipment_ref:
            checkout.shipment_ref = f"shp_{checkout.pk:06d}"
            checkout.state = Checkout.State.SHIPPED
            checkout.save(update_fields=["shipment_ref", "state"])
        return {"shipment": checkout.shipment_ref}
