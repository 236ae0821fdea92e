"""Outbound webhooks' records: the endpoints events are delivered to, and each delivery.

A ``WebhookEndpoint`` is written by an operator (the admin) or by code
(``litejobs.webhooks.create_endpoint``); both validate it the same way (URL, address policy,
declared topics). The relay writes one ``WebhookDelivery`` per endpoint and message in the
transaction that publishes the message; the delivery job records each attempt on it.
"""

from collections.abc import Callable
from typing import ClassVar

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from ..core.enums import DeliveryState
from ..core.errors import LitejobsError
from ..core.payloads import display_url

__all__ = ["DeliveryState", "WebhookDelivery", "WebhookEndpoint"]


class WebhookEndpoint(models.Model):
    """A URL that receives the events of some topics, signed with its own secret."""

    url = models.URLField(max_length=2000, help_text="Where events are POSTed.")
    secret = models.CharField(
        max_length=200, help_text="The HMAC-SHA256 signing secret; give it to the receiver."
    )
    topics = models.JSONField(
        default=list, help_text='Topics it receives (declared topic names), or ["*"] for all.'
    )
    tenant = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="It receives only events staged for this tenant (empty: untenanted events).",
    )
    description = models.CharField(max_length=200, blank=True, default="")
    enabled = models.BooleanField(default=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    failing_since = models.DateTimeField(
        null=True, blank=True, help_text="The first failure of the current streak."
    )
    last_success_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.TextField(blank=True, default="")
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_by = models.CharField(
        max_length=150, blank=True, default="", help_text="An operator, or litejobs itself."
    )
    created_at = models.DateTimeField()

    class Meta:
        db_table = "litejobs_webhookendpoint"
        ordering = ["id"]
        verbose_name = "webhook endpoint"

    #: ``rules(url=, topics=, secret=, tenant=)``: refuses what delivery would refuse (raising a
    #: ``LitejobsError`` whose ``field`` names the field) and answers the topics cleaned. The
    #: rules are the webhooks feature's (the address policy, the outbox's declared topics);
    #: litejobs' app sets them when it is ready (``litejobs.webhooks.endpoints``).
    rules: ClassVar[Callable[..., list[str]]]

    def __str__(self) -> str:
        return f"#{self.pk} {display_url(self.url)}"

    def clean(self) -> None:
        """Refuse what delivery would refuse: a malformed URL, a private address, an unknown
        topic, a short secret (the admin's form and ``full_clean`` call this); topics are
        kept sorted and unique."""
        try:
            self.topics = type(self).rules(
                url=self.url, topics=self.topics, secret=self.secret, tenant=self.tenant
            )
        except LitejobsError as error:
            field = getattr(error, "field", None)
            raise ValidationError({field: str(error)} if field else str(error)) from error

    def receives(self, topic: str, tenant: str) -> bool:
        """Whether an event of ``topic`` staged for ``tenant`` is delivered here."""
        return (
            self.enabled and self.tenant == tenant and ("*" in self.topics or topic in self.topics)
        )


class WebhookDelivery(models.Model):
    """One event delivered (or being delivered) to one endpoint: attempts and the last answer."""

    id = models.BigAutoField(primary_key=True)
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries", db_index=False
    )
    # No constraint: published messages are purged by their own retention.
    message_id = models.BigIntegerField()
    topic = models.CharField(max_length=200)
    state = models.CharField(
        max_length=10, choices=DeliveryState.choices, default=DeliveryState.PENDING
    )
    job_id = models.BigIntegerField(null=True, blank=True, help_text="The delivery job.")
    attempts = models.PositiveIntegerField(default=0)
    last_status = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="HTTP status of the last answer."
    )
    last_error = models.TextField(blank=True, default="")
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "litejobs_webhookdelivery"
        ordering = ["-id"]
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "message_id"], name="litejobs_webhookdelivery_once"
            ),
            models.CheckConstraint(
                condition=Q(state__in=DeliveryState.values), name="litejobs_webhookdelivery_state"
            ),
        ]
        indexes = [
            models.Index(
                fields=["finished_at"],
                name="litejobs_delivery_finished",
                condition=Q(finished_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"message {self.message_id} to endpoint {self.endpoint_id} ({self.state})"
