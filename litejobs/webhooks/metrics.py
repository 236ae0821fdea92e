"""Webhooks' metric families (``Feature.metrics``; the metrics add-on serves them):
``litejobs_webhook_endpoint_enabled{endpoint}`` and
``litejobs_webhook_endpoint_consecutive_failures{endpoint}``; ``litejobs_webhook_deliveries
{state}``: retained delivery records per state."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from ..conf import settings
from ..core.features import Family, gauges
from ..models import WebhookDelivery, WebhookEndpoint


def families(now: datetime) -> Iterator[Family]:
    """Each webhook endpoint's health, deliveries per state."""
    enabled, failures = gauges(
        ("endpoint",),
        (
            "litejobs_webhook_endpoint_enabled",
            "0 while the endpoint is disabled (by an operator, or after failures).",
        ),
        (
            "litejobs_webhook_endpoint_consecutive_failures",
            "Failed delivery attempts since the endpoint's last success.",
        ),
    )
    endpoints = WebhookEndpoint.objects.using(settings.DATABASE).values_list(
        "pk", "enabled", "consecutive_failures"
    )
    for pk, is_enabled, streak in endpoints:
        enabled.add([str(pk)], 1.0 if is_enabled else 0.0)
        failures.add([str(pk)], streak)
    yield from (enabled, failures)
    deliveries = Family(
        "litejobs_webhook_deliveries",
        "Webhook delivery records kept (within retention), per state.",
        ("state",),
    )
    deliveries.add_counts(WebhookDelivery.objects.using(settings.DATABASE), "state")
    yield deliveries
