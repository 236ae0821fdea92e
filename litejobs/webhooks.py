"""Outbound webhooks: endpoints, signed deliveries, retries, disabling, and the address policy.

The relay creates one delivery job per (endpoint, message) for every enabled endpoint whose
topics and tenant match a published message. The job POSTs the event as JSON, signed:

    Litejobs-Signature: t=<unix seconds>,v2=<hex HMAC-SHA256(secret, signed)>
    Litejobs-Event: <topic>
    Litejobs-Delivery: <delivery id, the same on every retry: deduplicate on it>

where ``signed`` is ``"<t>\n<delivery id>\n<topic>\n"`` followed by the raw body: the MAC
covers everything a receiver acts on — the time (replay window), the delivery id (which it
deduplicates on: a captured request replayed under a new id does not verify), the topic (which
it routes on) and the body. Receivers check it with ``verify_request(secret, request.headers,
request.body)`` or ``verify_signature(secret, header, body, delivery=..., event=...)`` (this
module has no litejobs state a receiver needs, so another Django project can import just these).

A 2xx answer is a success and resets the endpoint's failure streak. Anything else (another
status, a timeout, a refused connection) is a failed attempt: it is retried with the
``WEBHOOK_RETRY`` backoff, or when the answer says ``Retry-After``, then; after
``WEBHOOK_MAX_FAILURES`` consecutive failed attempts the endpoint is disabled with a reason
until an operator enables it again. Hosts are resolved and every address checked — loopback,
private, link-local, reserved and multicast addresses are refused — when an endpoint is saved
and again at every delivery, and the request goes to the address that was checked (no second
DNS lookup, no redirects, no proxy). ``WEBHOOK_ALLOWED_HOSTS`` lists hosts exempt from it.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import logging
import re
import secrets
import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from django.db import transaction

from . import __version__
from .conf import settings
from .core import clock
from .core.durations import parse_duration
from .core.payloads import dumps
from .core.retry import Retry
from .exceptions import (
    InvalidInput,
    Permanent,
    RetryAfter,
    SignatureInvalid,
    WebhookEndpointNotFound,
    WebhookError,
)
from .jobs import queues
from .jobs.declaration import job, queue_name

logger = logging.getLogger("litejobs.webhooks")

__all__ = [
    "DELIVERY_HEADER",
    "EVENT_HEADER",
    "SIGNATURE_HEADER",
    "SignedDelivery",
    "create_endpoint",
    "deliver",
    "disable_endpoint",
    "enable_endpoint",
    "sign",
    "verify_request",
    "verify_signature",
]

SIGNATURE_HEADER = "Litejobs-Signature"
EVENT_HEADER = "Litejobs-Event"
DELIVERY_HEADER = "Litejobs-Delivery"
#: How far a signature's timestamp may be from the receiver's clock (seconds), by default.
DEFAULT_TOLERANCE = 300
#: Secrets shorter than this are refused (``create_endpoint`` generates 32 random bytes).
SECRET_MIN = 16
SECRET_MAX = 200
URL_MAX = 2000
#: Bytes of an answer's body kept as the delivery's last error.
ANSWER_KEPT = 500
#: Bytes of an answer read at most (the rest is not waited for).
ANSWER_READ = 65536
#: The signature scheme: ``v2`` signs the time, the delivery id, the topic and the body.
SCHEME = "v2"
#: Bounds of what a receiver reads from the headers before any HMAC is computed.
SIGNATURE_HEADER_MAX = 2048
SIGNATURES_MAX = 8
_TIMESTAMP = re.compile(r"[0-9]{1,12}")  # ASCII digits only: int() also reads other scripts'
_HEX_MAC = re.compile(r"[0-9a-f]{64}")
_SIGNED_VALUE = re.compile(r"[\x21-\x7e]{1,200}")  # a delivery id or a topic: printable ASCII
#: The longest wait a ``Retry-After`` answer may ask for (a delivery caps it at its retry
#: policy's ``max`` too).
RETRY_AFTER_MAX = timedelta(days=1)
_RETRY_SECONDS = re.compile(r"[0-9]{1,20}")


# Signing (both halves) ---------------------------------------------------------------------


def _mac(secret: str, timestamp: int, delivery: str, event: str, body: bytes) -> str:
    signed = f"{timestamp}\n{delivery}\n{event}\n".encode() + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def _signed_value(value: Any, header: str) -> str:
    """A delivery id or topic as it enters the MAC: 1-200 printable ASCII characters."""
    text = "" if value is None else str(value)
    if not _SIGNED_VALUE.fullmatch(text):
        raise SignatureInvalid(
            f"The request's {header} header is missing or not 1-200 printable ASCII "
            "characters; litejobs signs it, so the request cannot be verified. Refuse it.",
            code="webhook-signature-malformed",
        )
    return text


def sign(secret: str, body: bytes, timestamp: int, *, delivery: Any, event: str) -> str:
    """The ``Litejobs-Signature`` header value for ``body`` of delivery ``delivery`` and topic
    ``event``, sent at ``timestamp`` (unix seconds)."""
    delivery = _signed_value(delivery, DELIVERY_HEADER)
    event = _signed_value(event, EVENT_HEADER)
    return f"t={int(timestamp)},{SCHEME}={_mac(secret, int(timestamp), delivery, event, body)}"


@dataclass(frozen=True)
class SignedDelivery:
    """What a verified request vouches for: when it was signed, its delivery id (deduplicate on
    it) and its topic (route on it)."""

    timestamp: int
    delivery: str
    event: str


def verify_request(
    secret: str,
    headers: Mapping[str, str],
    body: bytes | str,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    now: datetime | float | None = None,
) -> SignedDelivery:
    """Check a received webhook from its headers (``request.headers``) and raw body; answers
    the signed delivery id, topic and time, or raises ``SignatureInvalid``. See
    ``verify_signature``."""
    delivery, event = _header(headers, DELIVERY_HEADER), _header(headers, EVENT_HEADER)
    timestamp = verify_signature(
        secret,
        _header(headers, SIGNATURE_HEADER),
        body,
        delivery=delivery,
        event=event,
        tolerance=tolerance,
        now=now,
    )
    return SignedDelivery(timestamp, str(delivery), str(event))


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:  # a plain dict: match the name case-insensitively, as HTTP does
        wanted = name.lower()
        value = next((v for k, v in headers.items() if str(k).lower() == wanted), None)
    return value


def verify_signature(
    secret: str,
    header: str | None,
    body: bytes | str,
    *,
    delivery: str | None,
    event: str | None,
    tolerance: float = DEFAULT_TOLERANCE,
    now: datetime | float | None = None,
) -> int:
    """Check a received webhook: answers its timestamp, or raises ``SignatureInvalid``.

    ``header`` is the ``Litejobs-Signature`` value, ``body`` the raw request body (bytes, as
    received: verify before parsing), ``delivery`` and ``event`` the ``Litejobs-Delivery`` and
    ``Litejobs-Event`` values: the HMAC covers them, so a request replayed under another
    delivery id, or relabelled with another topic, does not verify. The HMAC must match one
    ``v2`` entry (constant-time comparison) and the timestamp be within ``tolerance`` seconds
    of ``now`` (default: the current time), which limits how long a captured request can be
    replayed; deduplicate on the delivery id within that window.
    """
    if not header:
        raise SignatureInvalid(
            f"The request has no {SIGNATURE_HEADER} header: it was not sent by litejobs (or a "
            "proxy dropped the header). Refuse it.",
            code="webhook-signature-missing",
        )
    timestamp, candidates = _parse_signature(header)
    delivery = _signed_value(delivery, DELIVERY_HEADER)
    event = _signed_value(event, EVENT_HEADER)
    raw = body.encode() if isinstance(body, str) else bytes(body)
    expected = _mac(secret, timestamp, delivery, event, raw)
    if not any(hmac.compare_digest(expected, candidate) for candidate in candidates):
        raise SignatureInvalid(
            "The signature does not match the body: the body was altered, or it was signed "
            "with another secret (check the endpoint's secret). Refuse the request.",
            code="webhook-signature-mismatch",
        )
    if now is None:
        now = clock.now()
    current = now.timestamp() if isinstance(now, datetime) else float(now)
    if abs(current - timestamp) > tolerance:
        raise SignatureInvalid(
            f"The signature was made {abs(current - timestamp):.0f}s away from now, over the "
            f"{tolerance:g}s tolerance: a replayed request, or a clock far off. Refuse it (and "
            "check the receiver's clock if every request fails so).",
            code="webhook-signature-expired",
        )
    return timestamp


def _parse_signature(header: str) -> tuple[int, list[str]]:
    """``t=<unix seconds>,v2=<hex>[,v2=<hex>...]`` as (timestamp, candidate MACs); anything
    else — other digits than ASCII, an over-long header or timestamp, no ``v2`` — is refused
    before any HMAC is computed. Entries of other schemes are ignored."""
    malformed = SignatureInvalid(
        f"The {SIGNATURE_HEADER} header is not 't=<unix seconds>,{SCHEME}=<64 hex digits>' (a "
        f"sender signing another scheme, such as the older v1, is refused too). Refuse the "
        "request.",
        code="webhook-signature-malformed",
    )
    if len(header) > SIGNATURE_HEADER_MAX:
        raise malformed
    timestamps, candidates = [], []
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t":
            timestamps.append(value)
        elif name == SCHEME:
            candidates.append(value)
    if (
        len(timestamps) != 1
        or not _TIMESTAMP.fullmatch(timestamps[0])
        or not candidates
        or len(candidates) > SIGNATURES_MAX
        or not all(_HEX_MAC.fullmatch(candidate) for candidate in candidates)
    ):
        raise malformed
    return int(timestamps[0]), candidates


# The address policy ------------------------------------------------------------------------


def display_url(url: str) -> str:
    """The URL as logs and lists may show it: scheme and host only (a path may be a secret)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(invalid URL)"
    return f"{parts.scheme}://{host}{port}/…" if host else "(invalid URL)"


@dataclass(frozen=True)
class Target:
    """Where a delivery goes: the checked addresses of the URL's host."""

    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[tuple[int, tuple], ...]


def _split(url: Any):
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


def _allowed(host: str) -> bool:
    allowed = settings.WEBHOOK_ALLOWED_HOSTS or ()
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


def resolve(url: str) -> Target:
    """Check ``url`` and resolve its host; every address must be public unless the host is
    in ``WEBHOOK_ALLOWED_HOSTS``. Raises ``WebhookError`` (``webhook-url-invalid``,
    ``webhook-host-unresolved``, ``webhook-address-refused``)."""
    parts, port = _split(url)
    host = parts.hostname
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
    if not _allowed(host):
        for _, sockaddr in addresses:
            kind = _refusal(sockaddr[0])
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


def check_endpoint_fields(*, url: Any, topics: Any, secret: Any, tenant: Any = "") -> list[str]:
    """Everything an endpoint must satisfy to be saved; answers the topics, cleaned.

    Raises ``WebhookError`` with ``field`` naming the field to fix. The secret is never
    quoted in a message.
    """
    from .outbox import declared_topics, is_declared

    resolve(url)
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
    unknown = sorted({t for t in topics if t != "*" and not is_declared(t)})
    if unknown:
        known = ", ".join(t.name for t in declared_topics()) or "none"
        raise WebhookError(
            f"No installed app declares the topic(s) {', '.join(map(repr, unknown))}. Use "
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


def new_secret() -> str:
    """A fresh signing secret: ``whsec_`` and 32 random bytes, URL-safe."""
    return "whsec_" + secrets.token_urlsafe(32)


# Operations --------------------------------------------------------------------------------


def _endpoints():
    from .models import WebhookEndpoint

    return WebhookEndpoint.objects.using(settings.DATABASE)


def _check_by(by: Any) -> str:
    if not isinstance(by, str) or not by.strip():
        raise InvalidInput(
            "Say who acts: pass by= (the admin passes the user name).", code="by-missing"
        )
    return by.strip()[:150]


def create_endpoint(
    url: str,
    topics: list[str],
    *,
    tenant: str = "",
    secret: str | None = None,
    description: str = "",
):
    """Create an endpoint receiving ``topics`` (declared names, or ``["*"]``) of ``tenant``.

    Validated like the admin's form (URL, address policy, topics, secret) before anything
    is written. Without ``secret`` one is generated; read it from the answer's ``secret``.
    """
    from .models import WebhookEndpoint

    secret = new_secret() if secret is None else secret
    cleaned = check_endpoint_fields(url=url, topics=topics, secret=secret, tenant=tenant)
    endpoint = WebhookEndpoint(
        url=url,
        topics=cleaned,
        tenant=tenant,
        secret=secret,
        description=str(description)[:200],
        created_at=clock.now(),
    )
    endpoint.save(using=settings.DATABASE)
    logger.info(
        "webhook endpoint created id=%s url=%s topics=%s",
        endpoint.pk,
        display_url(url),
        ",".join(cleaned),
    )
    return endpoint


def _get(endpoint_id: int):
    endpoint = _endpoints().filter(pk=endpoint_id).first()
    if endpoint is None:
        raise WebhookEndpointNotFound(
            f"No webhook endpoint has id {endpoint_id}; list them in the admin (litejobs, "
            "webhook endpoints)."
        )
    return endpoint


def enable_endpoint(endpoint_id: int, *, by: str):
    """Deliver to the endpoint again, with a fresh failure streak.

    Deliveries skipped while it was disabled are not resent by this; redeliver them from the
    admin's deliveries list (or retry their jobs).
    """
    by = _check_by(by)
    _get(endpoint_id)
    _endpoints().filter(pk=endpoint_id).update(
        enabled=True,
        consecutive_failures=0,
        failing_since=None,
        disabled_reason="",
        disabled_at=None,
        disabled_by="",
    )
    logger.info("webhook endpoint enabled id=%s by=%s", endpoint_id, by)
    return _get(endpoint_id)


def disable_endpoint(endpoint_id: int, *, reason: str, by: str):
    """Stop delivering to the endpoint: its pending deliveries are skipped until enabled."""
    by = _check_by(by)
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInput(
            "Say why the endpoint is disabled; the next operator reads it before enabling it.",
            code="reason-required",
        )
    _get(endpoint_id)
    _endpoints().filter(pk=endpoint_id).update(
        enabled=False, disabled_reason=reason.strip(), disabled_at=clock.now(), disabled_by=by
    )
    logger.info("webhook endpoint disabled id=%s by=%s reason=%r", endpoint_id, by, reason)
    return _get(endpoint_id)


# Delivery ----------------------------------------------------------------------------------


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to an address checked beforehand (the Host header keeps the name)."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.target = target

    def _open(self) -> socket.socket:
        last: OSError | None = None
        for family, sockaddr in self.target.addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            try:
                sock.connect(sockaddr)
            except OSError as error:
                sock.close()
                last = error
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        raise last or OSError("no address to connect to")

    def connect(self) -> None:
        self.sock = self._open()


class _PinnedHTTPSConnection(_PinnedHTTPConnection):
    """The same over TLS: the certificate is checked against the URL's host name."""

    def connect(self) -> None:
        self.sock = _tls().wrap_socket(self._open(), server_hostname=self.target.host)


_tls_context: ssl.SSLContext | None = None


def _tls() -> ssl.SSLContext:
    """One verifying TLS context per process (loading the CA store once)."""
    global _tls_context
    if _tls_context is None:
        _tls_context = ssl.create_default_context()
    return _tls_context


@dataclass(frozen=True)
class Answer:
    """What the receiver answered."""

    status: int
    retry_after: str | None
    text: str


def post(target: Target, body: bytes, headers: dict[str, str], timeout: float) -> Answer:
    """POST ``body`` to the checked target; answers its status, Retry-After and body start."""
    kind = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
    connection = kind(target, timeout)
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        response = connection.getresponse()
        text = response.read(ANSWER_READ)[:ANSWER_KEPT].decode("utf-8", "replace")
        return Answer(response.status, response.getheader("Retry-After"), text)
    finally:
        connection.close()


def retry_after(
    value: str | None, now: datetime, *, cap: timedelta = RETRY_AFTER_MAX
) -> timedelta | None:
    """A ``Retry-After`` value (ASCII seconds, or an HTTP date) as a delay from ``now``, at
    most ``cap`` (and at most ``RETRY_AFTER_MAX``); ``None`` for anything else, which the
    retry policy's backoff then replaces. A hostile receiver cannot park a delivery forever."""
    if not value:
        return None
    value = value.strip()
    cap = min(cap, RETRY_AFTER_MAX)
    if _RETRY_SECONDS.fullmatch(value):
        seconds = int(value)
        return cap if seconds >= cap.total_seconds() else timedelta(seconds=seconds)
    if not value.isascii() or len(value) > 64:
        return None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        wait = when - now
    except OverflowError:
        return cap
    return min(max(wait, timedelta(0)), cap)


def _describe(error: BaseException) -> str:
    if isinstance(error, WebhookError):
        return error.args[0]
    if isinstance(error, TimeoutError | socket.timeout):
        return "no answer within LITEJOBS['WEBHOOK_TIMEOUT']"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:ANSWER_KEPT]


# Read at import, so an invalid value falls back to its default here (litejobs.E020 reports it).
_RETRY = settings.or_default("WEBHOOK_RETRY", Retry.coerce)
#: The job's timeout (fixed at declaration): the request's, plus time to record the attempt.
_JOB_TIMEOUT = settings.or_default(
    "WEBHOOK_TIMEOUT", lambda value: parse_duration(value, name="WEBHOOK_TIMEOUT", allow_zero=False)
) + timedelta(seconds=5)


@job(
    name="litejobs.webhook_delivery",
    queue=settings.or_default("WEBHOOK_QUEUE", queue_name),
    key=lambda endpoint_id, message_id: f"webhook:{endpoint_id}:{message_id}",
    tenant=lambda tenant: tenant or None,
    retry=_RETRY,
    timeout=_JOB_TIMEOUT,
    # Each attempt's record (and the endpoint's failure streak) commits even when it fails.
    atomic=False,
)
def deliver(
    ctx,
    delivery_id: int,
    endpoint_id: int,
    message_id: int,
    topic: str,
    key: str,
    tenant: str,
    created_at: str,
    payload: dict,
) -> dict:
    """POST one published message to one endpoint, signed; record the attempt."""
    from .models import DeliveryState, WebhookDelivery, WebhookEndpoint

    alias = settings.DATABASE
    now = clock.now()
    endpoint = WebhookEndpoint.objects.using(alias).filter(pk=endpoint_id).first()
    delivery = WebhookDelivery.objects.using(alias).filter(pk=delivery_id)
    if endpoint is None:  # deleted: its deliveries went with it
        return {"skipped": "endpoint deleted"}
    if not endpoint.enabled:
        delivery.update(
            state=DeliveryState.SKIPPED,
            job_id=ctx.job_id,
            last_error=f"Not sent: the endpoint is disabled ({endpoint.disabled_reason}).",
            finished_at=now,
        )
        return {"skipped": "endpoint disabled"}
    body = dumps(
        {
            "id": message_id,
            "topic": topic,
            "key": key or None,
            "created_at": created_at,
            "data": payload,
        }
    ).encode()
    timestamp = int(now.timestamp())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": f"litejobs/{__version__}",
        SIGNATURE_HEADER: sign(endpoint.secret, body, timestamp, delivery=delivery_id, event=topic),
        EVENT_HEADER: topic,
        DELIVERY_HEADER: str(delivery_id),
    }
    started = time.monotonic()
    answer: Answer | None = None
    failure, permanent = "", False
    try:
        target = resolve(endpoint.url)  # DNS may have changed since the endpoint was saved
        request_timeout = min(settings.duration("WEBHOOK_TIMEOUT"), _JOB_TIMEOUT)
        answer = post(target, body, headers, request_timeout.total_seconds())
    except WebhookError as error:
        failure = _describe(error)
        permanent = error.code in ("webhook-address-refused", "webhook-url-invalid")
    except (OSError, http.client.HTTPException, ssl.SSLError, ValueError) as error:
        failure = _describe(error)
    elapsed_ms = (time.monotonic() - started) * 1000
    if answer is not None and 200 <= answer.status < 300:
        _succeeded(endpoint, delivery, ctx.job_id, answer.status, clock.now())
        logger.info(
            "webhook delivered delivery=%s endpoint=%s topic=%s status=%s duration_ms=%.1f",
            delivery_id,
            endpoint_id,
            topic,
            answer.status,
            elapsed_ms,
        )
        return {"status": answer.status}
    if answer is not None:
        failure = f"HTTP {answer.status}" + (f": {answer.text}" if answer.text else "")
    wait = None
    if answer is not None:
        wait = retry_after(answer.retry_after, now, cap=deliver.retry.max)
    disabled = _failed(
        endpoint,
        delivery,
        ctx,
        status=answer.status if answer is not None else None,
        failure=failure,
        final=permanent or ctx.final_attempt,
        now=clock.now(),
    )
    logger.warning(
        "webhook failed delivery=%s endpoint=%s url=%s attempt=%s error=%s%s",
        delivery_id,
        endpoint_id,
        display_url(endpoint.url),
        ctx.attempt,
        failure[:200],
        f" retry_after={wait.total_seconds():g}s" if wait is not None else "",
    )
    if disabled:
        raise Permanent(disabled)
    if permanent:
        raise Permanent(failure)
    if wait is not None:
        raise RetryAfter(wait, f"{failure} (the receiver asked to retry after {wait})")
    raise WebhookError(failure, code="webhook-delivery-failed")


def _succeeded(endpoint, delivery, job_id: int, status: int, now: datetime) -> None:
    from django.db.models import F

    from .models import DeliveryState, WebhookEndpoint

    with transaction.atomic(using=settings.DATABASE):
        delivery.update(
            state=DeliveryState.DELIVERED,
            job_id=job_id,
            attempts=F("attempts") + 1,
            last_status=status,
            last_error="",
            last_attempt_at=now,
            delivered_at=now,
            finished_at=now,
        )
        WebhookEndpoint.objects.using(settings.DATABASE).filter(pk=endpoint.pk).update(
            consecutive_failures=0, failing_since=None, last_success_at=now
        )


def _failed(
    endpoint, delivery, ctx, *, status, failure: str, final: bool, now: datetime
) -> str | None:
    """Record a failed attempt. When the endpoint is disabled now (by this failure, another,
    or an operator meanwhile), answers why, and this delivery ends."""
    from django.db.models import F

    from .models import DeliveryState, WebhookEndpoint

    limit = int(settings.WEBHOOK_MAX_FAILURES)
    with transaction.atomic(using=settings.DATABASE):
        row = (
            WebhookEndpoint.objects.using(settings.DATABASE)
            .select_for_update()
            .filter(pk=endpoint.pk)
            .first()
        )
        if row is None:
            return None
        was_enabled = row.enabled
        row.consecutive_failures += 1
        row.failing_since = row.failing_since or now
        fields = ["consecutive_failures", "failing_since"]
        if row.enabled and row.consecutive_failures >= limit:
            row.enabled = False
            row.disabled_at = now
            row.disabled_by = "litejobs"
            row.disabled_reason = (
                f"{row.consecutive_failures} consecutive failed delivery attempts since "
                f"{row.failing_since.isoformat()} (the last: {failure[:300]}). Fix the "
                "receiver, then enable the endpoint."
            )
            fields += ["enabled", "disabled_at", "disabled_by", "disabled_reason"]
            logger.error(
                "webhook endpoint disabled id=%s url=%s failures=%s",
                row.pk,
                display_url(row.url),
                row.consecutive_failures,
            )
        row.save(using=settings.DATABASE, update_fields=fields)
        final = final or not row.enabled
        delivery.update(
            state=DeliveryState.DEAD if final else DeliveryState.FAILED,
            job_id=ctx.job_id,
            attempts=F("attempts") + 1,
            last_status=status,
            last_error=failure[: ANSWER_KEPT + 100],
            last_attempt_at=now,
            finished_at=now if final else None,
        )
    if row.enabled:
        return None
    if was_enabled:
        return (
            f"Webhook endpoint {row.pk} was disabled after {row.consecutive_failures} "
            f"consecutive failed attempts (last: {failure[:300]})."
        )
    return f"Webhook endpoint {row.pk} is disabled: {row.disabled_reason}"


def _delivery_queue() -> list[tuple[str, str]]:
    """The queue of delivery jobs, for the queue checks (``queue-unused``)."""
    return [(str(settings.WEBHOOK_QUEUE), "LITEJOBS['WEBHOOK_QUEUE']")]


queues.queue_users.register("webhooks", _delivery_queue)
