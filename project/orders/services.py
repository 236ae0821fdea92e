"""Order use cases: what views, the admin and the demo data call."""

from decimal import Decimal

from django.db import transaction

from litejobs import clock
from litejobs.outbox import stage

from .jobs import run_checkout, send_receipt
from .models import Checkout, Order


def place_order(customer_email: str, total: Decimal, currency: str = "EUR") -> Order:
    """Create a (paid) order, enqueue its receipt and stage its ``orders.paid`` event: all
    three commit together or not at all.

    The event reaches the warehouse subscriber (``jobs.ask_warehouse_to_ship``) and every
    webhook endpoint subscribed to ``orders.paid`` (the demo's partner receiver).
    """
    with transaction.atomic():
        order = Order.objects.create(
            customer_email=customer_email, total=total, currency=currency, created_at=clock.now()
        )
        send_receipt.enqueue(order_id=order.pk)
        stage(
            "orders.paid",
            {"order_id": order.pk, "total": str(order.total), "currency": order.currency},
            key=f"order:{order.pk}",
        )
    return order


def start_checkout(customer_email: str, address: str, total: Decimal, currency: str = "EUR"):
    """Record a checkout and start its saga, in one transaction."""
    with transaction.atomic():
        checkout = Checkout.objects.create(
            customer_email=customer_email,
            address=address,
            total=total,
            currency=currency,
            created_at=clock.now(),
        )
        run_checkout.enqueue(checkout_id=checkout.pk)
    return checkout
