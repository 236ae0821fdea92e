"""What the demo's partner system received: one row per verified webhook delivery."""

from django.db import models


class ReceivedWebhook(models.Model):
    """A delivery the partner accepted after its signature verified.

    ``delivery`` (the ``Litejobs-Delivery`` header) is unique: a delivery retried after the
    partner already stored it is answered 200 again and stored once.
    """

    delivery = models.CharField(max_length=50, unique=True)
    event_id = models.BigIntegerField(help_text="The shop's outbox message id.")
    topic = models.CharField(max_length=200)
    data = models.JSONField()
    signed_at = models.DateTimeField(help_text="The signature's timestamp.")
    received_at = models.DateTimeField()

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.topic} #{self.event_id} (delivery {self.delivery})"
