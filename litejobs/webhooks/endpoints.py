"""Webhook endpoints: creating one, and the operator's verbs on them.

An endpoint is written by an operator (the admin) or by code (``create_endpoint``); both
validate it the same way, by the record's own rules (``WebhookEndpoint.clean`` and
``create_endpoint`` apply ``litejobs.models.webhooks.check_endpoint_fields``: URL and address
policy, declared topics, secret). After
``WEBHOOK_MAX_FAILURES`` consecutive failed attempts litejobs disables an endpoint with a
reason until an operator enables it again; ``doctor`` reports it.
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING, Any

from ..conf import settings
from ..core import clock
from ..core.diagnostics import Problem, note
from ..core.enums import OperatorVerb
from ..core.payloads import display_url
from ..exceptions import InvalidInput, WebhookEndpointNotFound
from ..outbox.topics import declared_topics

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from ..models import WebhookEndpoint

logger = logging.getLogger(__name__)


def new_secret() -> str:
    """A fresh signing secret: ``whsec_`` and 32 random bytes, URL-safe."""
    return "whsec_" + secrets.token_urlsafe(32)


def _endpoints() -> QuerySet[WebhookEndpoint]:
    from ..models import WebhookEndpoint  # the models load once Django's apps are ready

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
) -> WebhookEndpoint:
    """Create an endpoint receiving ``topics`` (declared names, or ``["*"]``) of ``tenant``.

    Validated like the admin's form (URL, address policy, topics, secret) before anything
    is written. Without ``secret`` one is generated; read it from the answer's ``secret``.
    """
    from ..models.webhooks import WebhookEndpoint, check_endpoint_fields  # once apps are ready

    secret = new_secret() if secret is None else secret
    declared = {topic.name for topic in declared_topics()}
    cleaned = check_endpoint_fields(
        url=url, topics=topics, secret=secret, tenant=tenant, declared=declared
    )
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


def _switch(
    endpoint_id: int,
    verb: OperatorVerb,
    fields: dict[str, Any],
    *,
    by: str,
    reason: str,
    user_id: int | None,
) -> WebhookEndpoint:
    """Set the endpoint's switch ``fields`` and write the operator action log row, in one
    transaction; answers the endpoint as it now stands."""
    from django.db import transaction

    from ..jobs.actionlog import Actor, record  # writes a model: once Django's apps are ready

    with transaction.atomic(using=settings.DATABASE):
        endpoint = _endpoints().select_for_update().filter(pk=endpoint_id).first()
        if endpoint is None:
            raise WebhookEndpointNotFound(
                f"No webhook endpoint has id {endpoint_id}; list them in the admin (litejobs, "
                "webhook endpoints)."
            )
        was_enabled = endpoint.enabled
        for field, value in fields.items():
            setattr(endpoint, field, value)
        endpoint.save(using=settings.DATABASE, update_fields=list(fields))
        record(
            verb,
            Actor(by, user_id, reason),
            affected=1,
            filter={"endpoint": endpoint_id, "url": display_url(endpoint.url)},
            change={"enabled": (was_enabled, fields["enabled"])},
        )
    return endpoint


def enable_endpoint(
    endpoint_id: int, *, by: str, reason: str = "", user_id: int | None = None
) -> WebhookEndpoint:
    """Deliver to the endpoint again, with a fresh failure streak; the operator action log
    records who enabled it (and why, when ``reason`` says).

    Deliveries skipped while it was disabled are not resent by this; redeliver them from the
    admin's deliveries list (or retry their jobs).
    """
    by = _check_by(by)
    endpoint = _switch(
        endpoint_id,
        OperatorVerb.ENDPOINT_ENABLE,
        {
            "enabled": True,
            "consecutive_failures": 0,
            "failing_since": None,
            "disabled_reason": "",
            "disabled_at": None,
            "disabled_by": "",
        },
        by=by,
        reason=reason,
        user_id=user_id,
    )
    logger.info("webhook endpoint enabled id=%s by=%s reason=%r", endpoint_id, by, reason)
    return endpoint


def disable_endpoint(
    endpoint_id: int, *, reason: str, by: str, user_id: int | None = None
) -> WebhookEndpoint:
    """Stop delivering to the endpoint: its pending deliveries are skipped until enabled. The
    operator action log records who disabled it and why."""
    by = _check_by(by)
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInput(
            "Say why the endpoint is disabled; the next operator reads it before enabling it.",
            code="reason-required",
        )
    reason = reason.strip()
    endpoint = _switch(
        endpoint_id,
        OperatorVerb.ENDPOINT_DISABLE,
        {
            "enabled": False,
            "disabled_reason": reason,
            "disabled_at": clock.now(),
            "disabled_by": by,
        },
        by=by,
        reason=reason,
        user_id=user_id,
    )
    logger.info("webhook endpoint disabled id=%s by=%s reason=%r", endpoint_id, by, reason)
    return endpoint


def problems() -> list[Problem]:
    """What ``doctor`` reports about webhooks: ``webhook-disabled`` for an endpoint litejobs
    disabled after consecutive failures; an endpoint an operator disabled is a note."""
    found: list[Problem] = []
    for endpoint in _endpoints().filter(enabled=False):
        since = endpoint.disabled_at.isoformat() if endpoint.disabled_at else "unknown"
        if endpoint.disabled_by == "litejobs":
            found.append(
                Problem(
                    "webhook-disabled",
                    f"Webhook endpoint {endpoint.pk} ({display_url(endpoint.url)}) was "
                    f"disabled at {since}: {endpoint.disabled_reason} Its events are not "
                    "delivered; enable it in the admin once the receiver works.",
                    where=str(endpoint.pk),
                    count=1,
                )
            )
        else:
            found.append(
                note(
                    "webhook-endpoint-disabled",
                    f"Webhook endpoint {endpoint.pk} ({display_url(endpoint.url)}) is disabled "
                    f"since {since} by {endpoint.disabled_by or 'unknown'} "
                    f"({endpoint.disabled_reason or 'no reason given'}).",
                    where=str(endpoint.pk),
                )
            )
    return found
