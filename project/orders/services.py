"""Order use cases: what views, the admin and the demo data call."""

from decimal import Decimal

from django.db import transaction

from litejobs import clock

from .jobs import send_receipt
from .models import Order


def place_order(customer_email: str, total: Decimal, currency: str = "EUR") -> Order:
    """Create an order and enqueue its receipt: both commit together or not at all."""
    with transaction.atomic():
        order = Order.objects.create(
            customer_email=customer_email, total=total, currency=currency, created_at=clock.now()
        )
        send_receipt.enqueue(order_id=order.pk)
    return order
