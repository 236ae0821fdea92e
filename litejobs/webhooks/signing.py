"""Webhook signatures, both halves: ``sign`` (litejobs, sending) and ``verify_request`` /
``verify_signature`` (the receiver). Importable alone: a receiver (another Django project, a
plain script) needs neither litejobs' app nor its settings, only this module.

Each delivery carries::

    Litejobs-Signature: t=<unix seconds>,v2=<hex HMAC-SHA256(secret, signed)>
    Litejobs-Event: <topic>
    Litejobs-Delivery: <delivery id, the same on every retry: deduplicate on it>

where ``signed`` is ``"<t>\n<delivery id>\n<topic>\n"`` followed by the raw body: the MAC
covers everything a receiver acts on — the time (replay window), the delivery id (which it
deduplicates on: a captured request replayed under a new id does not verify), the topic (which
it routes on) and the body.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core import clock
from ..core.durations import format_seconds
from ..exceptions import SignatureInvalid

SIGNATURE_HEADER = "Litejobs-Signature"
EVENT_HEADER = "Litejobs-Event"
DELIVERY_HEADER = "Litejobs-Delivery"
#: How far a signature's timestamp may be from the receiver's clock (seconds), by default.
DEFAULT_TOLERANCE = 300
#: The signature scheme: ``v2`` signs the time, the delivery id, the topic and the body.
SCHEME = "v2"
#: Bounds of what a receiver reads from the headers before any HMAC is computed.
SIGNATURE_HEADER_MAX = 2048
SIGNATURES_MAX = 8
_TIMESTAMP = re.compile(r"[0-9]{1,12}")  # ASCII digits only: int() also reads other scripts'
_HEX_MAC = re.compile(r"[0-9a-f]{64}")
_SIGNED_VALUE = re.compile(r"[\x21-\x7e]{1,200}")  # a delivery id or a topic: printable ASCII


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
            f"The signature was made {format_seconds(round(abs(current - timestamp)))} away from "
            f"now, over the {format_seconds(tolerance)} tolerance: a replayed request, or a clock "
            "far off. Refuse it (and check the receiver's clock if every request fails so).",
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
