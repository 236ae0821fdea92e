"""Order use cases: what views, the admin and the demo data call."""

from decimal import Decimal

from django.db import transaction

from litejobs import clock
from litejobs.outbox import stage

from .jobs import send_receipt
from .models import Order


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
