"""The orders app's background work."""

from django.core.mail import send_mail

from litejobs import Retry, clock, job

from .models import Order


@job(
    queue="emails",
    key=lambda order_id: f"receipt:{order_id}",
    retry=Retry(attempts=5, backoff="exponential", base="2s", max="10m"),
    timeout="30s",
)
def send_receipt(ctx, order_id: int) -> None:
    """Email the receipt once: the sent stamp commits with the job's completion."""
    order = Order.objects.select_for_update().get(pk=order_id)
    if order.receipt_sent_at is not None:
        return
    send_mail(
        subject=f"Your receipt for order #{order.pk}",
        message=f"Thank you! Total: {order.total} {order.currency}.",
        from_email="shop@example.com",
        recipient_list=[order.customer_email],
    )
    order.receipt_sent_at = clock.now()
    order.save(update_fields=["receipt_sent_at"])
