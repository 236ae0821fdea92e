"""Outbound webhooks' records: the endpoints events are delivered to, and each delivery, and
where webhooks may go.

A ``WebhookEndpoint`` is written by an operator (the admin) or by code
(``litejobs.webhooks.create_endpoint``); both validate it the same way, by
``check_endpoint_fields`` (URL, address policy, declared topics, secret, tenant). The relay
writes one ``WebhookDelivery`` per endpoint and message in the transaction that publishes the
message; the delivery job records each attempt on it.

The address policy (``resolve``): hosts are resolved and every address checked — loopback,
private, link-local, reserved and multicast addresses are refused — when an endpoint is saved
and again at every delivery, and the request goes to the address that was checked
(``litejobs.webhooks.transport``: no second DNS lookup, no redirects, no proxy). The hosts
exempt from it (``LITEJOBS["WEBHOOK_ALLOWED_HOSTS"]``) are passed in. The endpoint record
validates its URL by it, so it lives beside the record.
"""

import ipaddress
import socket
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import SplitResult, urlsplit

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from ..conf import settings
from ..core.enums import DeliveryState
from ..core.errors import LitejobsError
from ..core.payloads import display_url
from ..exceptions import WebhookError

__all__ = [
    "DeliveryState",
    "Target",
    "WebhookDelivery",
    "WebhookEndpoint",
    "check_endpoint_fields",
    "resolve",
]

# Where webhooks may go -------------------------------------------------------------------------

URL_MAX = 2000


@dataclass(frozen=True)
class Target:
    """Where a delivery goes: the checked addresses of the URL's host."""

    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[tuple[int, tuple[Any, ...]], ...]


def _split(url: Any) -> tuple[SplitResult, int]:
    if not isinstance(url, str) or not url or len(url) > URL_MAX:
        raise WebhookError(
            f"A webhook URL must be an http:// or https:// URL of at most {URL_MAX} characters.",
            code="webhook-url-invalid",
            field="url",
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise WebhookError(
            "The webhook URL cannot be read (a malformed host or port). Give an absolute "
            "http:// or https:// URL such as https://example.com/hooks.",
            code="webhook-url-invalid",
            field="url",
        ) from error
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise WebhookError(
            "A webhook URL must be absolute, with an http:// or https:// scheme, a host and a "
            "port from 1 to 65535 if any, such as https://example.com/hooks.",
            code="webhook-url-invalid",
            field="url",
        )
    if parts.username or parts.password:
        raise WebhookError(
            "A webhook URL must not carry credentials (user:password@); the signature "
            "authenticates litejobs to the receiver.",
            code="webhook-url-invalid",
            field="url",
        )
    if parts.fragment:
        raise WebhookError(
            "A webhook URL must not have a #fragment (it is never sent).",
            code="webhook-url-invalid",
            field="url",
        )
    return parts, port or (443 if parts.scheme == "https" else 80)


def _allowed(host: str, allowed: Iterable[Any]) -> bool:
    names = {str(name).strip().lower().strip("[]") for name in allowed}
    return host.lower().strip("[]") in names


def _refusal(address: str) -> str | None:
    """Why an address may not receive webhooks, or None when it is a public address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind, flag in (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("reserved", ip.is_reserved),
        ("private", ip.is_private),
    ):
        if flag:
            return kind
    return None if ip.is_global else "non-public"


def resolve(url: str, allowed_hosts: Iterable[Any] | None) -> Target:
    """Check ``url`` and resolve its host; every address must be public unless the host is
    in ``allowed_hosts`` (``WEBHOOK_ALLOWED_HOSTS``). Raises ``WebhookError``
    (``webhook-url-invalid``, ``webhook-host-unresolved``, ``webhook-address-refused``)."""
    parts, port = _split(url)
    host = cast(str, parts.hostname)  # _split refuses a URL without a host
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise WebhookError(
            f"The webhook host {host!r} does not resolve (DNS: "
            f"{getattr(error, 'strerror', None) or error}). Check the URL's host name.",
            code="webhook-host-unresolved",
            field="url",
        ) from error
    addresses = tuple(dict.fromkeys((family, sockaddr) for family, _, _, _, sockaddr in found))
    if not _allowed(host, allowed_hosts or ()):
        for _, sockaddr in addresses:
            kind = _refusal(str(sockaddr[0]))  # an IPv4 or IPv6 address
            if kind is not None:
                raise WebhookError(
                    f"The webhook host {host!r} resolves to {sockaddr[0]}, a {kind} address: "
                    "webhooks go only to public addresses, so an endpoint cannot reach this "
                    "network's internal services. To deliver to it on purpose (a local "
                    f"receiver in development), add {host!r} to "
                    "LITEJOBS['WEBHOOK_ALLOWED_HOSTS'].",
                    code="webhook-address-refused",
                    field="url",
                )
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return Target(parts.scheme, host, port, path, addresses)


# The records -----------------------------------------------------------------------------------

#: Secrets shorter than this are refused (``create_endpoint`` generates 32 random bytes).
SECRET_MIN = 16
SECRET_MAX = 200


def check_endpoint_fields(
    *,
    url: Any,
    topics: Any,
    secret: Any,
    tenant: Any = "",
    declared: Collection[str] | None = None,
) -> list[str]:
    """Everything an endpoint must satisfy to be saved (what delivery would refuse); answers
    the topics, cleaned. ``create_endpoint`` and the model's ``clean`` both apply it; with
    ``declared`` (the outbox's declared topic names, which the webhooks feature passes: the
    records sit below the outbox) a topic outside them is refused too.

    Raises ``WebhookError`` with ``field`` naming the field to fix. The secret is never
    quoted in a message.
    """
    resolve(url, settings.WEBHOOK_ALLOWED_HOSTS)
    if (
        not isinstance(topics, list | tuple)
        or not topics
        or not all(isinstance(t, str) and t for t in topics)
    ):
        raise WebhookError(
            'An endpoint needs a list of the topics it receives, e.g. ["orders.paid"], or '
            '["*"] for every topic.',
            code="webhook-topics-invalid",
            field="topics",
        )
    unknown = sorted({t for t in topics if t != "*" and t not in (declared or {t})})
    if unknown:
        known = ", ".join(sorted(declared or ())) or "none"
        raise WebhookError(
            f"No installed app declares the {'topic' if len(unknown) == 1 else 'topics'} "
            f"{', '.join(map(repr, unknown))}. Use "
            f"declared topics ({known}) or '*'.",
            code="webhook-topics-invalid",
            field="topics",
        )
    if not isinstance(secret, str) or not SECRET_MIN <= len(secret) <= SECRET_MAX:
        raise WebhookError(
            f"An endpoint's signing secret must be {SECRET_MIN}-{SECRET_MAX} characters; leave "
            "it out to have one generated.",
            code="webhook-secret-invalid",
            field="secret",
        )
    if not isinstance(tenant, str) or len(tenant) > 200:
        raise WebhookError(
            "An endpoint's tenant must be a string of at most 200 characters (empty: it "
            "receives untenanted events).",
            code="webhook-tenant-invalid",
            field="tenant",
        )
    return sorted(set(topics))


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

    def __str__(self) -> str:
        return f"#{self.pk} {display_url(self.url)}"

    def clean(self) -> None:
        """Refuse what delivery would refuse: a malformed URL, a private address, topics that
        are no list of names, a short secret (the admin's form, whose topics are chosen among
        the declared ones, and ``full_clean`` call this); topics are kept sorted and unique."""
        try:
            self.topics = check_endpoint_fields(
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
