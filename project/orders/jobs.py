"""The orders app's background work: receipts, the nightly reconciliation, the nightly receipts
batch and its summary, the statement, and the warehouse's ``orders.paid`` subscriber."""

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.core.mail import EmailMessage, send_mail
from django.db.models import Sum

import litejobs
from litejobs import Retry, clock, job, lock
from litejobs.outbox import subscriber

from . import fulfilment
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


def _day_before(ctx, zone: str) -> date:
    """The local day before the occurrence's instant (or before now, when run by hand)."""
    instant = ctx.occurrence.scheduled_for if ctx.occurrence else clock.now()
    return instant.astimezone(ZoneInfo(zone)).date() - timedelta(days=1)


# The demo's data is tiny: its scheduled jobs declare short timeouts, below LITEJOBS["LEASE"]
# as every scheduled job's must be (the test suite runs workers with a 3s lease).
@job(
    key=lambda day=None: f"reconcile:{day or 'scheduled'}",
    retry=Retry(attempts=3, backoff="exponential", base="30s", max="5m"),
    timeout="2s",
)
def reconcile_orders(ctx, day: str | None = None) -> dict:
    """Reconcile one UTC day of orders (the day before the occurrence unless ``day`` is given).

    Database-only and answered as the job's result, so a replay has exactly one effect. The
    nightly run and an operator's run of the same day (two jobs: their keys differ) never
    reconcile it at once: the day's lock is held across every worker, and a run that finds it
    held fails its attempt and retries later. The result carries the lock's token.
    """
    when = date.fromisoformat(day) if day else _day_before(ctx, "UTC")
    start = datetime.combine(when, time.min, tzinfo=UTC)
    with lock(f"orders.reconcile:{when.isoformat()}", ttl="10s", wait="1s") as held:
        orders = Order.objects.filter(
            created_at__gte=start, created_at__lt=start + timedelta(days=1)
        )
        totals = {
            row["currency"]: str(row["total"])
            for row in orders.values("currency").annotate(total=Sum("total")).order_by("currency")
        }
        return {
            "day": when.isoformat(),
            "orders": orders.count(),
            "totals": totals,
            "receipts_missing": orders.filter(receipt_sent_at__isnull=True).count(),
            "lock_token": held.token,
        }


@job(key=lambda batch_id, done, dead, cancelled: f"receipts-summary:{batch_id}", timeout="2s")
def receipts_summary(ctx, batch_id: int, done: int, dead: int, cancelled: int) -> dict:
    """The nightly receipts batch ended (every child, however it ended): email ops the counts."""
    send_mail(
        subject=f"Nightly receipts: {done} sent, {dead} failed, {cancelled} cancelled",
        message=f"Batch {batch_id}: manage.py litejobs batch show {batch_id}",
        from_email="shop@example.com",
        recipient_list=["ops@example.com"],
    )
    return {"batch": batch_id, "done": done, "dead": dead, "cancelled": cancelled}


@job(key=lambda day=None: f"receipts-batch:{day or 'scheduled'}", timeout="2s")
def send_missing_receipts(ctx, day: str | None = None) -> dict:
    """Send every receipt still missing for one UTC day as one batch, whose summary
    (``receipts_summary``) is enqueued once, when the last of them has ended."""
    when = date.fromisoformat(day) if day else _day_before(ctx, "UTC")
    start = datetime.combine(when, time.min, tzinfo=UTC)
    missing = Order.objects.filter(
        created_at__gte=start,
        created_at__lt=start + timedelta(days=1),
        receipt_sent_at__isnull=True,
    ).values_list("pk", flat=True)
    with litejobs.batch(on_complete=receipts_summary, label=f"receipts {when}") as batch:
        send_receipt.enqueue_many([{"order_id": pk} for pk in missing])
    return {"day": when.isoformat(), "batch": batch.id}


@job(key=lambda: "statement", timeout="2s", retry=Retry(attempts=3, base="1m", max="10m"))
def send_statement(ctx) -> int:
    """Email finance the previous Berlin day's statement; answers the orders it lists.

    Email is outside the database: the message carries the occurrence identity as its
    idempotency key so the mail system can drop a duplicate sent by a replayed attempt.
    """
    when = _day_before(ctx, "Europe/Berlin")
    zone = ZoneInfo("Europe/Berlin")
    start = datetime.combine(when, time.min, tzinfo=zone)
    end = datetime.combine(when + timedelta(days=1), time.min, tzinfo=zone)
    orders = list(Order.objects.filter(created_at__gte=start, created_at__lt=end).order_by("id"))
    lines = [f"#{o.pk} {o.customer_email} {o.total} {o.currency}" for o in orders]
    EmailMessage(
        subject=f"Statement for {when.isoformat()} ({len(orders)} orders)",
        body="\n".join(lines) or "No orders.",
        from_email="shop@example.com",
        to=["finance@example.com"],
        headers={"X-Idempotency-Key": ctx.key},
    ).send()
    return len(orders)


@subscriber("orders.paid", queue="emails", retry=Retry(attempts=5, base="5s", max="5m"))
def ask_warehouse_to_ship(ctx, message) -> int:
    """Tell the warehouse to ship a paid order (``orders.paid`` is staged by ``place_order``).

    An email leaves the database, so it carries the job's key (``outbox:<message id>``) as its
    idempotency key: the mail system drops a duplicate sent by a retried attempt.
    """
    order = Order.objects.get(pk=message.payload["order_id"])
    EmailMessage(
        subject=f"Ship order #{order.pk}",
        body=f"Order #{order.pk} for {order.customer_email} is paid "
        f"({message.payload['total']} {message.payload['currency']}). Please ship it.",
        from_email="shop@example.com",
        to=["warehouse@example.com"],
        headers={"X-Idempotency-Key": ctx.key},
    ).send()
    return order.pk


@job(
    key=lambda checkout_id: f"checkout:{checkout_id}",
    atomic=False,  # each step commits as it finishes; a replay skips the finished ones
    retry=Retry(attempts=3, backoff="exponential", base="2s", max="1m"),
    timeout="1m",
)
def run_checkout(ctx, checkout_id: int) -> dict:
    """The checkout saga: charge, reserve, ship. If shipping fails for good, the reservation
    is released and the charge refunded, last first (see the job's steps in the admin)."""
    charged = ctx.step.run(
        "charge",
        lambda: fulfilment.charge(checkout_id),
        compensate=lambda out: fulfilment.refund(checkout_id, out["charge"]),
    )
    reserved = ctx.step.run(
        "reserve",
        lambda: fulfilment.reserve(checkout_id),
        compensate=lambda out: fulfilment.release(checkout_id, out["reservation"]),
    )
    shipped = ctx.step.run("ship", lambda: fulfilment.ship(checkout_id))
    return {**charged, **reserved, **shipped}
