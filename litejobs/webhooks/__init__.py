"""Outbound webhooks: endpoints receive the outbox's events, signed.

``signing`` (``sign``, ``verify_request``, ``verify_signature``: importable alone, for
receivers), ``transport`` (the POST pinned to the checked address, and ``Retry-After``),
``endpoints`` (``create_endpoint``, ``enable_endpoint``, ``disable_endpoint``) and
``delivery`` (the relay's publisher and the delivery job ``litejobs.webhook_delivery``). The
address policy (``litejobs.models.webhooks.resolve``) and what an endpoint must satisfy
(``check_endpoint_fields``) live beside the endpoint record, which validates by them.

This package's face needs no settings and no models, so a receiver can import the signing
functions from it (or from ``litejobs.webhooks.signing``) without litejobs' app.
"""

from .endpoints import create_endpoint, disable_endpoint, enable_endpoint
from .signing import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    SignedDelivery,
    sign,
    verify_request,
    verify_signature,
)
from .transport import RETRY_AFTER_MAX, retry_after

__all__ = [
    "DELIVERY_HEADER",
    "EVENT_HEADER",
    "RETRY_AFTER_MAX",
    "SIGNATURE_HEADER",
    "SignedDelivery",
    "create_endpoint",
    "disable_endpoint",
    "enable_endpoint",
    "retry_after",
    "sign",
    "verify_request",
    "verify_signature",
]
