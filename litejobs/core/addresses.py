"""Where webhooks may go: the URL rules and the address policy.

Hosts are resolved and every address checked — loopback, private, link-local, reserved and
multicast addresses are refused — when an endpoint is saved and again at every delivery, and
the request goes to the address that was checked (``litejobs.webhooks.transport``: no second
DNS lookup, no redirects, no proxy). The hosts exempt from it
(``LITEJOBS["WEBHOOK_ALLOWED_HOSTS"]``) are passed in. The ``WebhookEndpoint`` record
validates its URL here, so the policy sits below the records.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import SplitResult, urlsplit

from .errors import WebhookError

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
