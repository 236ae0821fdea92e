"""Outbox topics and subscribers the outbox and webhook tests publish to.

Autodiscovered like any app's ``jobs.py``, so real ``runrelay`` and ``runworker`` processes
started by the tests know them too.
"""

from litejobs import Retry, RetryAfter, job
from litejobs.outbox import subscriber, topic
from tests.testapp.models import Mark

topic("test.webhook-only", description="Delivered to webhook endpoints only.")
topic("test.other", description="Another webhook-only topic.")
topic("test.card-charged", description="A card was charged.", sensitive=("card",))


@subscriber("test.card-charged", retry=1)
def declines_card(ctx, message) -> None:
    """Fails quoting the card, as a payment library's error might."""
    payload = message.payload
    raise ValueError(f"card {payload['card']} declined for order {payload['order']}")


@subscriber("test.private-note", sensitive=("payload",))
def files_note(ctx, message) -> None:
    """A subscriber whose whole message is sensitive: so is its topic's, wherever it shows."""


@subscriber("test.order-paid", retry=Retry(attempts=2, base="1s"))
def record_paid(ctx, message) -> int:
    """One Mark per message: the order, the message id and its ordering key."""
    Mark.objects.create(
        label=f"paid:{message.payload['order']}", value=message.id, note=message.key or ""
    )
    return message.id


@subscriber("test.order-paid", queue="audit")
def audit_paid(ctx, message) -> None:
    """A second subscriber of the same topic: each gets its own job per message."""
    Mark.objects.create(label=f"audit:{message.payload['order']}", value=message.id)


@job(key=lambda label: f"busy:{label}", retry=Retry(attempts=2, base="1h", max="1h", jitter="none"))
def asks_to_wait(ctx, label: str, seconds: float = 90) -> None:
    """Fails saying when to try again (as a server's Retry-After would)."""
    raise RetryAfter(seconds, f"the server is busy; try again in {seconds:g}s")
